// Per-family schema lists, assembled by AllSchemas() (schema.cpp).
// Kept apart from schema.h so that adding a family touches only
// this header, the assembling file and the family's own files.
#pragma once

#include <span>

#include "ops/schema.h"

namespace vigil::ops {

std::span<const OpSchema> ElementwiseSchemas();
std::span<const OpSchema> ConvPoolSchemas();
std::span<const OpSchema> NormalizationSchemas();
std::span<const OpSchema> AttentionSchemas();      // Attention, RotaryEmbedding (attention.cpp)
std::span<const OpSchema> LinalgSchemas();
std::span<const OpSchema> ReductionSchemas();
std::span<const OpSchema> ShapeOpSchemas();      // Reshape, Transpose, Concat, Slice, Gather, ...
std::span<const OpSchema> TensorGenSchemas();    // Constant, ConstantOfShape, Range, Shape, Size, ...
std::span<const OpSchema> RecurrentSchemas();
std::span<const OpSchema> QuantizationSchemas();
std::span<const OpSchema> QuantizedLinearSchemas();  // MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv
std::span<const OpSchema> QuantizedContribSchemas();  // com.microsoft QLinearAdd, ..., QLinearConcat
std::span<const OpSchema> DropoutSchemas();
std::span<const OpSchema> LossSchemas();        // NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
std::span<const OpSchema> VisionSchemas();          // CenterCropPad, Col2Im, AffineGrid (vision.cpp)
std::span<const OpSchema> DetectionSchemas();       // NonMaxSuppression, RoiAlign (detection.cpp)
std::span<const OpSchema> GridSampleSchemas();      // grid_sample.cpp
std::span<const OpSchema> ControlFlowSchemas();     // If, Loop, Scan (control_flow.cpp)
std::span<const OpSchema> SequenceSchemas();        // Sequence*, Optional* (sequence.cpp)
std::span<const OpSchema> SelectionSchemas();       // Unique, Compress, ReverseSequence (selection.cpp)
std::span<const OpSchema> TextSchemas();            // TfIdfVectorizer (text.cpp)
std::span<const OpSchema> ClassicMlSchemas();       // ai.onnx.ml: TreeEnsemble, Binarizer, ... (classic_ml.cpp)
std::span<const OpSchema> ImageSchemas();           // ImageDecoder (image.cpp)
std::span<const OpSchema> SignalSchemas();          // DFT, STFT, windows, MelWeightMatrix (signal.cpp)
std::span<const OpSchema> LayoutSchemas();          // ai.vigil: ConvNhwc (layout_ops.cpp)
std::span<const OpSchema> QdqSchemas();            // ai.vigil: QConv, QConvNhwc, QAdd (qdq_ops.cpp)
std::span<const OpSchema> FusedSchemas();           // ai.vigil: MatMulBias, Gelu, Attention (fused_ops.cpp)
std::span<const OpSchema> FaultInjectionSchemas();  // empty unless VIGIL_ENABLE_TEST_OPS=1

}  // namespace vigil::ops

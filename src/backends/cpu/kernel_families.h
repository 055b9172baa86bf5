// Per-family CPU kernel lists, assembled by AllKernels() (kernel.cpp).
// Kept apart from kernel.h so that adding a family touches only
// this header, the assembling file and the family's own files.
#pragma once

#include <span>

#include "backends/cpu/kernel.h"

namespace vigil::cpu {

std::span<const KernelDef> ElementwiseKernels();
std::span<const KernelDef> ConvPoolKernels();
std::span<const KernelDef> NormalizationKernels();
std::span<const KernelDef> AttentionKernels();  // Attention, RotaryEmbedding (attention.cpp)
std::span<const KernelDef> LinalgKernels();
std::span<const KernelDef> ReductionKernels();
std::span<const KernelDef> ShapeOpKernels();
std::span<const KernelDef> TensorGenKernels();
std::span<const KernelDef> RecurrentKernels();
std::span<const KernelDef> QuantizationKernels();
std::span<const KernelDef> QuantizedLinearKernels();  // MatMulInteger, ConvInteger, QLinear{MatMul,Conv}
std::span<const KernelDef> QuantizedContribKernels();  // com.microsoft QLinearAdd, ..., QLinearConcat
std::span<const KernelDef> DropoutKernels();
std::span<const KernelDef> LossKernels();
std::span<const KernelDef> VisionKernels();          // CenterCropPad, Col2Im, AffineGrid (vision.cpp)
std::span<const KernelDef> DetectionKernels();       // NonMaxSuppression, RoiAlign (detection.cpp)
std::span<const KernelDef> GridSampleKernels();      // grid_sample.cpp
std::span<const KernelDef> SelectionKernels();       // Unique, Compress, ReverseSequence (selection.cpp)
std::span<const KernelDef> TextKernels();            // TfIdfVectorizer (text.cpp)
std::span<const KernelDef> ClassicMlKernels();       // ai.onnx.ml: TreeEnsemble, Binarizer, ... (classic_ml.cpp)
std::span<const KernelDef> ImageKernels();           // ImageDecoder (image_decoder.cpp); empty without the image libraries
std::span<const KernelDef> SignalKernels();          // DFT, STFT, windows, MelWeightMatrix (signal.cpp)
std::span<const KernelDef> QdqKernels();             // ai.vigil: QConv, QConvNhwc, QAdd (qdq_fused.cpp)
std::span<const KernelDef> FusedKernels();           // ai.vigil: MatMulBias, Gelu (fused_ops.cpp)
std::span<const KernelDef> FaultInjectionKernels();  // empty unless VIGIL_ENABLE_TEST_OPS=1

}  // namespace vigil::cpu

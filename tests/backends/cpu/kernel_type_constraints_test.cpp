// The CPU kernels' declared dtypes (kernel_type_constraints.h): one
// declaration per kernel, inputs the schemas have, and the backend's
// load-time check that refuses a node by them.
#include "backends/cpu/kernel_type_constraints.h"

#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernel_test_util.h"
#include "ops/fault_injection.h"
#include "ops/schema.h"

namespace vigil::cpu {
namespace {

using ir::DataType;

std::string Name(std::string_view domain, std::string_view op, int since, int until) {
  return fmt::format("{}{}{} {}{}", domain, domain.empty() ? "" : ".", op, since,
                     until == kLatest ? std::string("+") : fmt::format("-{}", until));
}

TEST(KernelTypeConstraints, EveryKernelHasADeclaration) {
  for (const KernelDef& k : AllKernels()) {
    EXPECT_NE(FindKernelTypeConstraints(k), nullptr)
        << Name(k.domain, k.op, k.since_version, k.until_version)
        << " has a CPU kernel but no declaration in kernel_type_constraints.cpp";
  }
}

TEST(KernelTypeConstraints, EveryDeclarationHasItsKernelOnce) {
  auto all = AllKernelTypeConstraints();
  for (size_t i = 0; i < all.size(); ++i) {
    const KernelTypeConstraints& c = all[i];
    const std::string name = Name(c.domain, c.op, c.since_version, c.until_version);
    const KernelDef* def = FindKernel(c.domain, c.op, c.since_version);
    const bool test_op = std::string_view(c.domain) == "ai.vigil.testing";
    // ImageDecoder has a kernel only where the build found the image
    // libraries (cmake/VigilImageLibs.cmake); its declaration is then unused.
    const bool image_decoder_not_built = std::string_view(c.op) == "ImageDecoder" && def == nullptr;
    if (test_op && !ops::TestOpsEnabled()) {
      EXPECT_EQ(def, nullptr) << name;  // the test ops have kernels only with VIGIL_ENABLE_TEST_OPS=1
    } else if (!image_decoder_not_built) {
      ASSERT_NE(def, nullptr) << name << " is declared but has no CPU kernel";
      EXPECT_EQ(def->since_version, c.since_version) << name << ": the kernel's opset range differs";
      EXPECT_EQ(def->until_version, c.until_version) << name << ": the kernel's opset range differs";
      EXPECT_EQ(FindKernelTypeConstraints(*def), &c) << name;
    }
    for (size_t j = i + 1; j < all.size(); ++j) {
      EXPECT_FALSE(std::string_view(c.op) == all[j].op && std::string_view(c.domain) == all[j].domain &&
                   c.since_version == all[j].since_version)
          << name << " is declared twice";
    }
  }
}

// The most inputs any schema of the op over [since, until] has (kVariadic
// for no limit), or -1 when no schema covers the range.
int MaxInputs(const KernelTypeConstraints& c) {
  int most = -1;
  for (const ops::OpSchema& s : ops::AllSchemas()) {
    const bool same_domain = (ops::IsDefaultDomain(s.domain) && ops::IsDefaultDomain(c.domain)) ||
                             std::string_view(s.domain) == c.domain;
    if (std::string_view(s.name) != c.op || !same_domain) continue;
    if (s.since_version > c.until_version || s.until_version < c.since_version) continue;
    most = std::max(most, s.max_inputs);
  }
  return most;
}

TEST(KernelTypeConstraints, DeclaredInputsExistInTheSchemas) {
  for (const KernelTypeConstraints& c : AllKernelTypeConstraints()) {
    const std::string name = Name(c.domain, c.op, c.since_version, c.until_version);
    if (std::string_view(c.domain) == "ai.vigil.testing" && !ops::TestOpsEnabled()) continue;
    const int most = MaxInputs(c);
    ASSERT_GE(most, 0) << name << " has no schema";
    uint32_t seen = 0;
    for (size_t v = 0; v < c.variable_count(); ++v) {
      const KernelTypeVariable& var = c.variables[v];
      EXPECT_NE(var.inputs, 0u) << name << " " << var.name << " binds no input";
      EXPECT_NE(var.dtypes, 0u) << name << " " << var.name << " takes no dtype";
      EXPECT_EQ(var.dtypes & ~kAnyDtype, 0u) << name << " " << var.name << " has bits that are no dtype";
      EXPECT_EQ(seen & var.inputs, 0u) << name << ": an input is bound by two type variables";
      seen |= var.inputs;
      for (int i = 0; i < 32; ++i) {
        if (((var.inputs >> i) & 1u) == 0) continue;
        EXPECT_LT(i, most) << name << " " << var.name << " binds input " << i << ", but the op has at most "
                           << most << " inputs";
      }
      if (var.and_later) {
        EXPECT_EQ(most, ops::kVariadic) << name << " " << var.name << ": the op is not variadic";
      }
    }
  }
}

TEST(KernelTypeConstraints, VariadicVariablesBindEveryLaterInput) {
  const KernelDef* concat = FindKernel("", "Concat", 13);
  ASSERT_NE(concat, nullptr);
  const KernelTypeConstraints* c = FindKernelTypeConstraints(*concat);
  ASSERT_NE(c, nullptr);
  for (size_t i : {0u, 1u, 7u, 40u}) {
    ASSERT_NE(c->VariableOf(i), nullptr) << i;
    EXPECT_STREQ(c->VariableOf(i)->name, "T");
  }
  const KernelDef* gather = FindKernel("", "Gather", 13);
  const KernelTypeConstraints* g = FindKernelTypeConstraints(*gather);
  ASSERT_NE(g, nullptr);
  EXPECT_STREQ(g->VariableOf(1)->name, "Tind");
  EXPECT_EQ(g->VariableOf(2), nullptr);
}

// --- the backend's load-time check --------------------------------------------

ir::TypeInfo TensorType(DataType dtype) {
  ir::TypeInfo t;
  t.kind = ir::TypeInfo::Kind::kTensor;
  t.elem_type = dtype;
  return t;
}

ir::Node Node(std::string op, size_t inputs) {
  ir::Node n;
  n.op_type = std::move(op);
  n.name = "n";
  for (size_t i = 0; i < inputs; ++i) n.inputs.push_back(fmt::format("in{}", i));
  n.outputs = {"out"};
  return n;
}

TEST(CpuBackendTypes, RefusesAKnownDtypeOutsideTheDeclaration) {
  auto cpu = MakeCpuBackend();
  ir::Node gather = Node("Gather", 2);
  ir::TypeInfo f32 = TensorType(DataType::kFloat32), i32 = TensorType(DataType::kInt32),
               f16 = TensorType(DataType::kFloat16), str = TensorType(DataType::kString);
  std::string why;
  EXPECT_TRUE(cpu->SupportsTyped(gather, 13, {{&f32, &i32}, {}}, &why)) << why;
  EXPECT_TRUE(cpu->SupportsTyped(gather, 13, {{&f16, &i32}, {}}, &why)) << why;
  EXPECT_FALSE(cpu->SupportsTyped(gather, 13, {{&f32, &f32}, {}}, &why));
  EXPECT_EQ(why, "dtype float32 of input 1 is not among the CPU Gather kernel's dtypes for Tind (int32, int64)");
  EXPECT_FALSE(cpu->SupportsTyped(gather, 13, {{&str, &i32}, {}}, &why));
  EXPECT_NE(why.find("dtype str of input 0 is not among the CPU Gather kernel's dtypes for T (float32, uint8"),
            std::string::npos)
      << why;

  // Unknown at load (no type, or a sequence): not refused.
  ir::TypeInfo seq;
  seq.kind = ir::TypeInfo::Kind::kSequence;
  EXPECT_TRUE(cpu->SupportsTyped(gather, 13, {{nullptr, &i32}, {}}, &why)) << why;
  EXPECT_TRUE(cpu->SupportsTyped(gather, 13, {{&seq, nullptr}, {}}, &why)) << why;
  EXPECT_TRUE(cpu->SupportsTyped(gather, 13, {{&f32}, {}}, &why)) << why;  // fewer types than inputs

  // An omitted optional input is not checked.
  ir::Node clip = Node("Clip", 3);
  clip.inputs[1] = "";
  EXPECT_TRUE(cpu->SupportsTyped(clip, 13, {{&f16, &str, &f16}, {}}, &why)) << why;
  EXPECT_FALSE(cpu->SupportsTyped(clip, 13, {{&f16, &f16, &str}, {}}, &why));
  EXPECT_NE(why.find("dtype str of input 2 is not among the CPU Clip kernel's dtypes for T"), std::string::npos)
      << why;

  // Variadic: every later input of Concat is T.
  ir::Node concat = Node("Concat", 4);
  EXPECT_FALSE(cpu->SupportsTyped(concat, 13, {{&f32, &f32, &f32, &str}, {}}, &why));
  EXPECT_NE(why.find("dtype str of input 3"), std::string::npos) << why;

  // Per opset: Clip 6 takes floats only, Clip 11 integers too.
  ir::Node clip1 = Node("Clip", 1);
  EXPECT_FALSE(cpu->SupportsTyped(clip1, 6, {{&i32}, {}}, &why));
  EXPECT_TRUE(cpu->SupportsTyped(clip1, 11, {{&i32}, {}}, &why)) << why;

  // No kernel at all.
  EXPECT_FALSE(cpu->SupportsTyped(Node("NoSuchOp", 1), 13, {{&f32}, {}}, &why));
  EXPECT_EQ(why, "the CPU backend has no kernel for NoSuchOp at opset 13");
}

// --- over-declaration: a kernel runs a node of every dtype it declares ---------

// Zero-filled (a valid value of every dtype, and no divisor here).
runtime::Tensor Zeros(DataType dtype, std::vector<int64_t> shape) {
  runtime::Tensor t = runtime::Tensor::Allocate(dtype, std::move(shape)).value();
  if (t.byte_size() > 0) std::memset(t.raw_data(), 0, t.byte_size());
  return t;
}

// A one of dtype d (Range's delta must not be 0).
runtime::Tensor OneOf(DataType d) {
  runtime::Tensor t = Zeros(d, {});
  auto* p = static_cast<uint8_t*>(t.raw_data());
  switch (d) {
    case DataType::kFloat32: { float v = 1; std::memcpy(p, &v, 4); break; }
    case DataType::kFloat64: { double v = 1; std::memcpy(p, &v, 8); break; }
    case DataType::kFloat16: { uint16_t v = 0x3C00; std::memcpy(p, &v, 2); break; }
    case DataType::kBfloat16: { uint16_t v = 0x3F80; std::memcpy(p, &v, 2); break; }
    default: p[0] = 1; break;  // little-endian integers
  }
  return t;
}

struct SpotCheck {
  const char* op;
  int opset;
  std::vector<ir::Attribute> attributes;
  // The inputs for main dtype d.
  std::vector<runtime::Tensor> (*inputs)(DataType d);
};

TEST(KernelTypeConstraints, KernelsRunEveryDeclaredMainDtype) {
  using testing::IntAttr;
  using testing::IntsAttr;
  const SpotCheck checks[] = {
      {"Abs", 13, {}, [](DataType d) { return std::vector{Zeros(d, {2, 3})}; }},
      {"Relu", 14, {}, [](DataType d) { return std::vector{Zeros(d, {2, 3})}; }},
      {"Add", 14, {}, [](DataType d) { return std::vector{Zeros(d, {2, 3}), Zeros(d, {3})}; }},
      {"Equal", 19, {}, [](DataType d) { return std::vector{Zeros(d, {2, 3}), Zeros(d, {2, 3})}; }},
      {"Where", 16, {}, [](DataType d) {
         return std::vector{Zeros(DataType::kBool, {2, 3}), Zeros(d, {2, 3}), Zeros(d, {1})};
       }},
      {"Gather", 13, {IntAttr("axis", 1)}, [](DataType d) {
         return std::vector{Zeros(d, {2, 3}), Zeros(DataType::kInt32, {4})};
       }},
      {"Transpose", 13, {}, [](DataType d) { return std::vector{Zeros(d, {2, 3})}; }},
      {"Concat", 13, {IntAttr("axis", 0)}, [](DataType d) {
         return std::vector{Zeros(d, {2, 3}), Zeros(d, {1, 3}), Zeros(d, {3, 3})};
       }},
      {"Cast", 19, {IntAttr("to", 1)}, [](DataType d) { return std::vector{Zeros(d, {2, 3})}; }},
      {"ReduceMax", 18, {}, [](DataType d) { return std::vector{Zeros(d, {2, 3})}; }},
      {"ArgMax", 13, {}, [](DataType d) { return std::vector{Zeros(d, {2, 3})}; }},
      {"MaxPool", 12, {IntsAttr("kernel_shape", {2, 2})}, [](DataType d) {
         return std::vector{Zeros(d, {1, 2, 3, 3})};
       }},
      {"TopK", 11, {}, [](DataType d) { return std::vector{Zeros(d, {2, 3}), Zeros(DataType::kInt64, {1})}; }},
      {"Clip", 13, {}, [](DataType d) { return std::vector{Zeros(d, {2, 3})}; }},
      {"Pad", 18, {}, [](DataType d) { return std::vector{Zeros(d, {2, 3}), Zeros(DataType::kInt64, {4})}; }},
      {"Range", 11, {}, [](DataType d) { return std::vector{Zeros(d, {}), Zeros(d, {}), OneOf(d)}; }},
      {"Softmax", 13, {}, [](DataType d) { return std::vector{Zeros(d, {2, 3})}; }},
      {"MatMul", 13, {}, [](DataType d) { return std::vector{Zeros(d, {2, 3}), Zeros(d, {3, 2})}; }},
  };
  for (const SpotCheck& c : checks) {
    const KernelDef* def = FindKernel("", c.op, c.opset);
    ASSERT_NE(def, nullptr) << c.op;
    const KernelTypeConstraints* decl = FindKernelTypeConstraints(*def);
    ASSERT_NE(decl, nullptr) << c.op;
    int ran = 0;
    for (int bit = 1; bit < 64; ++bit) {
      if (((decl->variables[0].dtypes >> bit) & 1u) == 0) continue;
      const auto d = static_cast<DataType>(bit);
      std::vector<runtime::Tensor> inputs = c.inputs(d);
      std::vector<const runtime::Tensor*> pointers;
      std::vector<std::string> names;
      for (size_t i = 0; i < inputs.size(); ++i) {
        pointers.push_back(&inputs[i]);
        names.push_back(fmt::format("in{}", i));
      }
      std::vector<std::string> outputs = {"out"};
      if (std::string_view(c.op) == "TopK") outputs.push_back("indices");
      ir::Node node = testing::MakeNode(c.op, names, outputs, c.attributes);
      auto out = testing::RunKernel(node, c.opset, pointers);
      EXPECT_TRUE(out.ok()) << c.op << " declares " << ir::DataTypeName(d) << " but fails on it: "
                            << out.status().ToString();
      ++ran;
    }
    EXPECT_GT(ran, 0) << c.op;
  }
}

}  // namespace
}  // namespace vigil::cpu

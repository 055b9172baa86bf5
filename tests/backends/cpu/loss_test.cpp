// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against a plain
// float64 reference (written from the ONNX definition: the loss of element
// (n, d) is -weight[c] * score[n, c, d] at its class c, the scores
// log-softmaxed over C first for SoftmaxCrossEntropyLoss; 'mean' divides by
// the sum of the weights used), on odd sizes, plus shape inference and the
// error paths.
#include <cmath>
#include <optional>

#include <gtest/gtest.h>

#include "backends/cpu/broadcast.h"
#include "backends/cpu/float_kernel_test_util.h"
#include "backends/cpu/kernel_test_util.h"

namespace vigil::cpu {
namespace {

namespace kt = vigil::cpu::testing;
using namespace vigil::cpu::float_testing;  // NOLINT: test helpers
using ir::DataType;

struct Case {
  Shape scores;  // [N, C, d...]
  bool log_softmax = false;
  std::string reduction = "mean";
  std::optional<int64_t> ignore;
  bool weighted = false;
  DataType dtype = DataType::kFloat32;
};

// The reference: returns the loss elements (reduction 'none') or the one
// reduced value, and the log-probabilities.
std::vector<double> Reference(const Case& k, const std::vector<double>& x, const std::vector<int64_t>& target,
                              const std::vector<double>& w, std::vector<double>* log_prob) {
  const int64_t n = k.scores[0], c = k.scores[1];
  int64_t d = 1;
  for (size_t i = 2; i < k.scores.size(); ++i) d *= k.scores[i];
  std::vector<double> s = x;
  if (k.log_softmax) {
    for (int64_t a = 0; a < n; ++a) {
      for (int64_t b = 0; b < d; ++b) {
        long double sum = 0;
        for (int64_t j = 0; j < c; ++j) sum += std::exp(static_cast<long double>(x[(a * c + j) * d + b]));
        for (int64_t j = 0; j < c; ++j) s[(a * c + j) * d + b] = x[(a * c + j) * d + b] - std::log(static_cast<double>(sum));
      }
    }
    *log_prob = s;
  }
  std::vector<double> loss;
  double total = 0, weights = 0;
  for (int64_t a = 0; a < n; ++a) {
    for (int64_t b = 0; b < d; ++b) {
      const int64_t cls = target[a * d + b];
      if (k.ignore && cls == *k.ignore) {
        loss.push_back(0);
        continue;
      }
      const double wc = k.weighted ? w[cls] : 1.0;
      loss.push_back(-wc * s[(a * c + cls) * d + b]);
      total += loss.back();
      weights += wc;
    }
  }
  if (k.reduction == "none") return loss;
  return {k.reduction == "sum" ? total : total / weights};
}

void Check(const Case& k) {
  SCOPED_TRACE(::testing::Message() << "scores " << ShapeString(k.scores) << " reduction " << k.reduction
                                    << (k.ignore ? " ignore" : "") << (k.weighted ? " weighted" : ""));
  const int64_t c = k.scores[1];
  Shape target_shape = k.scores;
  target_shape.erase(target_shape.begin() + 1);
  std::vector<double> x = RoundTo(k.dtype, Random(Product(k.scores), 7, -4, 4));
  std::vector<int64_t> target(Product(target_shape));
  for (size_t i = 0; i < target.size(); ++i) target[i] = static_cast<int64_t>((i * 5 + 3) % c);
  if (k.ignore) {
    for (size_t i = 0; i < target.size(); i += 4) target[i] = *k.ignore;
  }
  std::vector<double> w = RoundTo(k.dtype, Random(c, 9, 0.2, 2));
  std::vector<double> log_prob;
  std::vector<double> want = Reference(k, x, target, w, &log_prob);

  runtime::Tensor xt = MakeFloat(k.dtype, k.scores, x);
  runtime::Tensor tt = kt::I64(target_shape, target);
  runtime::Tensor wt = MakeFloat(k.dtype, {c}, w);
  std::vector<ir::Attribute> attrs = {kt::StringAttr("reduction", k.reduction)};
  if (k.ignore) attrs.push_back(kt::IntAttr("ignore_index", *k.ignore));
  const std::string op = k.log_softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss";
  std::vector<std::string> outputs = {"loss"};
  if (k.log_softmax) outputs.push_back("log_prob");
  ir::Node node = kt::MakeNode(op, {"x", "t", k.weighted ? "w" : ""}, outputs, attrs);
  auto r = kt::RunKernel(node, 13, {&xt, &tt, k.weighted ? &wt : nullptr});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const runtime::Tensor& loss = r->at(0);
  EXPECT_EQ(loss.dtype(), k.dtype);
  EXPECT_EQ(loss.shape(), k.reduction == "none" ? target_shape : Shape{});
  ExpectClose(ReadFloat(loss), want, Tolerance(k.dtype), Tolerance(k.dtype));
  if (k.log_softmax) {
    EXPECT_EQ(r->at(1).shape(), k.scores);
    ExpectClose(ReadFloat(r->at(1)), RoundTo(k.dtype, log_prob), Tolerance(k.dtype), Tolerance(k.dtype));
  }
}

TEST(Loss, NegativeLogLikelihoodEveryReductionOnOddSizes) {
  for (const char* reduction : {"none", "sum", "mean"}) {
    Check({{5, 13}, false, reduction, std::nullopt, false, DataType::kFloat32});
    Check({{3, 127, 5}, false, reduction, std::nullopt, true, DataType::kFloat32});
    Check({{2, 13, 3, 7}, false, reduction, int64_t{1}, true, DataType::kFloat32});
    Check({{2, 13, 3, 7}, false, reduction, int64_t{-100}, false, DataType::kFloat32});
  }
}

TEST(Loss, SoftmaxCrossEntropyEveryReductionOnOddSizes) {
  for (const char* reduction : {"none", "sum", "mean"}) {
    Check({{5, 13}, true, reduction, std::nullopt, false, DataType::kFloat32});
    Check({{3, 127, 5}, true, reduction, std::nullopt, true, DataType::kFloat32});
    Check({{2, 13, 3, 7}, true, reduction, int64_t{4}, true, DataType::kFloat32});
  }
}

TEST(Loss, HalfAndDoubleScores) {
  Check({{4, 13, 3}, true, "mean", int64_t{2}, true, DataType::kFloat16});
  Check({{4, 13, 3}, false, "none", std::nullopt, true, DataType::kBfloat16});
  Check({{4, 13, 3}, true, "sum", std::nullopt, false, DataType::kFloat64});
}

TEST(Loss, ShapeInference) {
  ir::TypeInfo scores = Type(DataType::kFloat32, {S("N"), K(13), K(5), K(7)});
  ir::TypeInfo target = Type(DataType::kInt64, {S("N"), K(5), K(7)});
  ir::Node none = kt::MakeNode("SoftmaxCrossEntropyLoss", {"x", "t"}, {"loss", "log_prob"},
                               {kt::StringAttr("reduction", "none")});
  auto r = kt::InferNode(none, 13, {&scores, &target});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(DimsOf(r->at(0)), "[N,5,7]");
  EXPECT_EQ(DimsOf(r->at(1)), "[N,13,5,7]");
  ir::Node mean = kt::MakeNode("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"});
  r = kt::InferNode(mean, 13, {&scores, &target});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(DimsOf(r->at(0)), "[]");
  ir::TypeInfo short_target = Type(DataType::kInt64, {S("N"), K(5)});
  r = kt::InferNode(mean, 13, {&scores, &short_target});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("input 1 (target) has rank 2, expected 3"), std::string::npos)
      << r.status().summary();
}

TEST(Loss, BadInputIsAnErrorNamingTheInput) {
  runtime::Tensor x = kt::F32({2, 3}, {0, 1, 2, 3, 4, 5});
  ir::Node node = kt::MakeNode("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"});
  runtime::Tensor out_of_range = kt::I64({2}, {1, 3});
  auto r = kt::RunKernel(node, 13, {&x, &out_of_range});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidInput);
  EXPECT_NE(r.status().summary().find("input 1 (target) holds class 3 at element 1, expected 0 to 2 (C = 3)"),
            std::string::npos)
      << r.status().summary();
  runtime::Tensor wrong_n = kt::I64({3}, {0, 1, 2});
  r = kt::RunKernel(node, 13, {&x, &wrong_n});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("expected dim 0 to be 2"), std::string::npos) << r.status().summary();
  runtime::Tensor weights = kt::F32({2}, {1, 1});
  runtime::Tensor target = kt::I64({2}, {0, 1});
  ir::Node weighted = kt::MakeNode("NegativeLogLikelihoodLoss", {"x", "t", "w"}, {"loss"});
  r = kt::RunKernel(weighted, 13, {&x, &target, &weights});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("input 2 (weight) has shape [2], expected [3]"), std::string::npos)
      << r.status().summary();
  ir::Node bad_reduction =
      kt::MakeNode("NegativeLogLikelihoodLoss", {"x", "t"}, {"loss"}, {kt::StringAttr("reduction", "avg")});
  r = kt::RunKernel(bad_reduction, 13, {&x, &target});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().summary().find("reduction is 'avg'"), std::string::npos) << r.status().summary();
}

}  // namespace
}  // namespace vigil::cpu

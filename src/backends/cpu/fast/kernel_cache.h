// What the optimised CPU paths prepare once and reuse across runs: oneDNN
// primitives per convolution shape, and constant weights reordered into the
// layout those primitives read. One cache per CPU backend, i.e. per session;
// it keeps the constants it packed alive (their owners) as long as it lives,
// so a packed entry can never outlive, or be mistaken for, other weights at
// the same address. Thread-safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace vigil::cpu::fast {

class KernelCache {
 public:
  KernelCache();
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  struct Impl;  // conv_dnnl.cpp
  Impl& impl() { return *impl_; }

  // What it holds (tests).
  struct Counts {
    size_t conv_plans = 0;
    size_t packed_weights = 0;
  };
  Counts counts() const;

  // A float32 2D convolution ran on the reference code because oneDNN was
  // not there to take it (for the backend's notes).
  void NoteConvWithoutDnnl() { conv_without_dnnl_.store(true, std::memory_order_relaxed); }
  bool conv_without_dnnl() const { return conv_without_dnnl_.load(std::memory_order_relaxed); }

 private:
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> conv_without_dnnl_{false};
};

}  // namespace vigil::cpu::fast

// A kernel that does nothing, for error_paths_test: launched with an invalid
// block size, it gives a real cudaErrorInvalidConfiguration.
#include <cuda_runtime.h>

namespace {
__global__ void DoNothing() {}
}  // namespace

void LaunchDoNothingForErrorPathTests(unsigned threads_per_block) { DoNothing<<<1, threads_per_block>>>(); }

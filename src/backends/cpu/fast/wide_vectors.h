// Functions built for AVX-512, AVX2 and the baseline, picked at load by the
// CPU (GCC's target_clones), with the loops inlined into each clone
// (flatten: else the shared loop instance runs at the baseline's width).
// The same IEEE operations in wider vectors: the files that use it are built
// without FMA contraction (CMakeLists.txt), so every clone gives the same
// results.
#pragma once

#define VIGIL_WIDE_VECTORS __attribute__((target_clones("avx512f", "avx2", "default"), flatten))

// Everything the vigil command writes to stdout and stderr passes through
// base/printable.h's filter: names, paths and doc strings read from model
// and tensor files reach the terminal (or a pipe) as valid UTF-8 with no
// control sequence in them, whichever command printed them. Newlines, tabs
// and vigil's own colour sequences pass.
#pragma once

namespace vigil::cli {

// Replaces stdout and stderr (the C streams printf and fprintf write to) by
// filtered streams on the same descriptors. Call first thing in main.
void FilterStandardStreams();

}  // namespace vigil::cli

// The portable measurement core: serial commands, model set-up, timed
// invokes, and the protocol lines (see /DESIGN.md "Serial protocol").
//
// Host -> board, one command a line:  `hello` (print `ready` again), `run`
// (warm up, time MCUNAS_RUNS invokes, print one `result` or `error` line).
// Nothing runs at boot but the `ready` line: the host always sends `run`.
#ifndef MCUNAS_RUNNER_H_
#define MCUNAS_RUNNER_H_

#include <stddef.h>
#include <stdint.h>

namespace mcunas {

// Call once at start-up (after the port's own set-up).
void runner_begin();
// Call in the main loop: reads serial input and acts on complete lines.
void runner_poll();

}  // namespace mcunas

#endif  // MCUNAS_RUNNER_H_

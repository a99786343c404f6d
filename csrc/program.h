// Compiled programs: the torch.ops.torchtpu operators that capture one FX graph into a program and
// replay it (python/torchtpu/compile/ drives them).
#pragma once

namespace torchtpu {

// The operators are registered statically under the torchtpu namespace:
//   capture_begin(Tensor[] inputs) -> ()
//   capture_abort() -> ()
//   capture_end(Tensor[] inputs, Tensor[] outputs) -> (int handle, int[] kinds, int[] indices, str reason)
//       handle 0: not captured, reason says why (the graph's work ran as usual)
//   run_program(int handle, Tensor[] inputs) -> (Tensor[] results, str mismatch)
//       a non-empty mismatch: the inputs differ from the captured ones, nothing ran
//   graph_capture_begin() -> (), graph_capture_end() -> int handle: torch.tpu.graph's capture

// graph_capturing says whether a torch.tpu.graph capture is recording: the device guard's
// isStreamCapturing answers with it, so torch.accelerator.current_stream().is_capturing() (and the
// optimizers' check of their capturable flag) sees tpu captures as it sees CUDA's.
bool graph_capturing();

}  // namespace torchtpu

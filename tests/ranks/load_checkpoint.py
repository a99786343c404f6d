"""One process, no process group: load the sharded checkpoint fsdp.py saved on 2 ranks into an
unsharded model on tpu and compare it with the full parameters rank 0 wrote beside it."""
import os
import sys

import torch
import torch.distributed.checkpoint as dcp

from fsdp import make_model


def main(ckpt):
    model = make_model().to("tpu")
    state = model.state_dict()
    dcp.load(state, checkpoint_id=ckpt)
    model.load_state_dict(state)
    want = torch.load(os.path.join(ckpt, "full_reference.pt"))
    got = model.state_dict()
    assert set(got) == set(want)
    for k in want:
        assert got[k].device.type == "tpu"
        torch.testing.assert_close(got[k].cpu(), want[k], rtol=0, atol=0)
    print(f"loaded {len(want)} tensors from the 2-rank checkpoint", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])

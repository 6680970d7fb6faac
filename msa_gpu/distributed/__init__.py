"""Work spread beyond one device: a batch's families over Dask workers or
this machine's GPUs (``spread``: the cut, shared by both; ``gpus``: one worker
process or host thread a device), and a large family's progressive stage cut into subtrees
(``subtrees``). Output is byte-identical to one device's."""

from msa_gpu.distributed.gpus import DevicePool, align_many_gpus, parse_gpus, visible_gpus
from msa_gpu.distributed.spread import align_large, align_many_dask, align_spread, groups

__all__ = ["DevicePool", "align_large", "align_many_dask", "align_many_gpus", "align_spread", "groups", "parse_gpus",
           "visible_gpus"]

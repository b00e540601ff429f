"""Which device nodes a unit may open: the GPU's, and nothing that reaches memory, disks or ports.

``DeviceAllow=`` takes a path (``/dev/nvidia0``) or a device class from /proc/devices
(``char-nvidia-frontend``, ``block-sd``), each with an access mode (``r``, ``w``, ``m``). An
inference server needs only its GPU's nodes; ``/dev/mem``, ``/dev/port``, a disk or a class glob
let a compromised server read host memory or raw disks past every file-system restriction.
"""

from __future__ import annotations

import re

#: the GPU nodes and classes of NVIDIA, DRM (Intel, AMD) and ROCm's compute node
_GPU = re.compile(
    r"/dev/nvidia(?:\d+|ctl|-uvm|-uvm-tools|-modeset)|/dev/nvidia-caps/nvidia-cap\d+"
    r"|/dev/dri/(?:card|renderD)\d+|/dev/kfd"
    r"|char-nvidia(?:-frontend|ctl|-uvm|-uvm-tools|-modeset|-caps)|char-drm|char-kfd")
#: nodes and classes that reach memory, I/O ports, disks or every device of a kind
_RAW = re.compile(
    r"/dev/(?:mem|kmem|port|ioport|kcore|mapper/.*|dm-\d+|sd[a-z]+\d*|hd[a-z]+\d*|vd[a-z]+\d*"
    r"|xvd[a-z]+\d*|nvme\d+(?:n\d+(?:p\d+)?)?|mmcblk\d+(?:p\d+)?|loop\d*|loop-control|md\d+"
    r"|sg\d+|disk/.*|block/.*|cpu/.*|msr.*|uio\d+|vfio/.*|kvm|fuse|tty\d*|console|watchdog\d*)"
    r"|block-.*|char-(?:mem|msr|cpu/.*|sg|vfio|uio|misc|tty|vcs)|.*[*?\[].*|/dev/?|/dev/\.\..*")


def device_name(value: str) -> str:
    """The node or class of one ``DeviceAllow=`` value (without its access mode)."""
    return value.strip().split()[0] if value.strip() else ""


def is_gpu_device(name: str) -> bool:
    return bool(_GPU.fullmatch(name))


def is_raw_device(name: str) -> bool:
    """A node or class that gives access to memory, ports or disks (or more than one device)."""
    return bool(_RAW.fullmatch(name)) or not (name.startswith("/dev/") or
                                               name.startswith(("char-", "block-")))

"""Stand-in PyTorch (see README.md): the calls scripts/gpu-copy.py makes,
timed on the CPU with real copies of host memory."""
import time

__version__ = "2.11.0+standin"
uint8 = "uint8"


class version:
    cuda = "13.0"


class _Buf:
    def __init__(self, n):
        self.data = bytearray(n)

    def fill_(self, v):
        self.data[:] = bytes([v]) * len(self.data)

    def copy_(self, src):
        self.data[:] = src.data


def empty(n, dtype=None, device=None):
    return _Buf(n)


def empty_like(b):
    return _Buf(len(b.data))


class cuda:
    @staticmethod
    def is_available():
        return True

    @staticmethod
    def mem_get_info():
        return (1 << 30, 1 << 31)

    @staticmethod
    def get_device_name(i):
        return "NVIDIA H200 (stand-in)"

    @staticmethod
    def synchronize():
        pass

    class Event:
        def __init__(self, enable_timing=False):
            self.t = 0.0

        def record(self):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return (end.t - self.t) * 1e3

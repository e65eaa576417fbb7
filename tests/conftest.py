"""Shared test setup. Runs before any test module imports jax."""
import os
import sys
from pathlib import Path

# Every test process gets 8 simulated CPU devices, whichever test first starts jax's backend.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.pop("SCALEBOOK_STRICT", None)
os.environ.pop("SCALEBOOK_RECORD", None)
sys.path.insert(0, str(Path(__file__).resolve().parent))

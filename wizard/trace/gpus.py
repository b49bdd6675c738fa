"""The GPUs warpwizard knows by name: their deviceProperties exactly as Kineto writes them.

One table serves the trace doctor (a trace without deviceProperties is matched to a GPU by its SM
count, ``devices.KNOWN_GPUS``) and the trace builder (its presets), so the two cannot disagree.
"""

from __future__ import annotations

from typing import Any

PROPERTIES: dict[str, dict[str, Any]] = {
    "V100": {
        "name": "Tesla V100-SXM2-32GB",
        "totalGlobalMem": 34089730048,
        "computeMajor": 7,
        "computeMinor": 0,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536,
        "regsPerMultiprocessor": 65536,
        "warpSize": 32,
        "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 98304,
        "numSms": 80,
        "sharedMemPerBlockOptin": 98304,
    },
    "RTX2080Ti": {
        "name": "NVIDIA GeForce RTX 2080 Ti",
        "totalGlobalMem": 11554586624,
        "computeMajor": 7,
        "computeMinor": 5,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 1024,
        "regsPerBlock": 65536,
        "regsPerMultiprocessor": 65536,
        "warpSize": 32,
        "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 65536,
        "numSms": 68,
        "sharedMemPerBlockOptin": 65536,
    },
    "A100": {
        "name": "NVIDIA A100-SXM4-80GB",
        "totalGlobalMem": 85198045184,
        "computeMajor": 8,
        "computeMinor": 0,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536,
        "regsPerMultiprocessor": 65536,
        "warpSize": 32,
        "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 167936,
        "numSms": 108,
        "sharedMemPerBlockOptin": 166912,
    },
    "H100": {
        "name": "NVIDIA H100 80GB HBM3",
        "totalGlobalMem": 84929216512,
        "computeMajor": 9,
        "computeMinor": 0,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536,
        "regsPerMultiprocessor": 65536,
        "warpSize": 32,
        "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 233472,
        "numSms": 132,
        "sharedMemPerBlockOptin": 232448,
    },
    "MI300X": {
        "name": "AMD Instinct MI300X",
        "totalGlobalMem": 205822885888,
        "computeMajor": 9,
        "computeMinor": 4,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536,
        "warpSize": 64,
        "sharedMemPerBlock": 65536,
        "numSms": 304,
        "maxSharedMemoryPerMultiProcessor": 65536,
    },
    "B200": {
        "name": "NVIDIA B200",
        "totalGlobalMem": 191503138816,
        "computeMajor": 10,
        "computeMinor": 0,
        "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536,
        "regsPerMultiprocessor": 65536,
        "warpSize": 32,
        "sharedMemPerBlock": 49152,
        "sharedMemPerMultiprocessor": 233472,
        "numSms": 148,
        "sharedMemPerBlockOptin": 232448,
    },
}

# What a report calls a GPU matched by SM count alone (several models share a count).
FAMILY: dict[str, str] = {
    "V100": "Tesla V100",
    "RTX2080Ti": "GeForce RTX 2080 Ti",
    "A100": "A100",
    "H100": "H100/H800/H200",
    "B200": "B200",
}


def sm_count_examples() -> str:
    """'V100 80, ..., B200 148': the SM counts of the GPUs this table knows, for a hint in prose."""
    return ", ".join(f"{FAMILY[key]} {PROPERTIES[key]['numSms']}" for key in FAMILY)

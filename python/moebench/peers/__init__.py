"""Peer engines' kernels under moebench's tuner: `moebench sweep gmm --backend vllm` starts
`python -m moebench.peers.worker --engine vllm`, which serves the tuner's worker protocol with
the engine's Triton fused_moe kernel as the gmm family's backend (docs/migrating.md)."""

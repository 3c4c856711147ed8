"""Deep Compression (Han et al., ICLR 2016) on plain arrays: magnitude pruning, k-means weight
sharing with linear initialisation, Huffman-coded sizes and the CSC storage report. Knows
nothing of accelerators; ``compress.model`` applies it to the weights of an ONNX file."""

from archsim.compress.huffman import huffman_bits
from archsim.compress.prune import prune_mask
from archsim.compress.share import kmeans_share
from archsim.compress.storage import LayerStorage, csc_entries, layer_storage

__all__ = [
    "LayerStorage",
    "csc_entries",
    "huffman_bits",
    "kmeans_share",
    "layer_storage",
    "prune_mask",
]

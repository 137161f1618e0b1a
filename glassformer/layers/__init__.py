"""The Transformer's parts, each written out so it can be read and checked.

Shape letters (the single source is docs/notation.md):

    B batch            T query/target length     S key/source length
    D d_model          H heads                   Dh per-head width = D / H
    F feed-forward     V vocabulary              M mel bins / MFCC coefficients
    N audio frames     L audio samples

Mask convention: boolean, True = may attend (as torch.nn.functional.scaled_dot_product_attention;
torch.nn.MultiheadAttention uses the opposite).
"""

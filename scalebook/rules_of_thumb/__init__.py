"""The original book's rules of thumb, beside the package's exact forms.

"How to Scale Your Model" (Austin et al., 2025) states many results in a rounded or large-N form:
collective times without the (N-1)/N factor, a tensor-parallel limit that counts the MLP only, the
FSDP x TP threshold, decode sharding limits. Readers compare our numbers with the original's, so
each such rule lives here, named as the original's approximation, documented with the exact
function it approximates and the chapter that shows both. One submodule per part of the book:
`collectives` (chapter 3), `training` (chapters 5-6), `inference` (chapters 7-8), `gpus`
(chapter 2b). The exact forms stay in their own modules; nothing here feeds the step model.
"""

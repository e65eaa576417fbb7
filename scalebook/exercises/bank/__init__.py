"""The problem bank: one module per problem page, each registering its problems with `@problem`.

The module `chNN_slug` serves the page `exercises/NN-slug.md` (`ch02b_gpus` -> `02b-gpus`);
`scalebook grade` scores a notebook against the problems of its page's module.
"""

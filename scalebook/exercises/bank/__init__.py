"""The problem bank: one module per chapter, each registering its problems with `@problem`."""

"""The fairspec language server (`fairspec lsp`): pygls over stdio; see server.py, indexes.py and analysis/."""

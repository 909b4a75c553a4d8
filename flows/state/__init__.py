"""The run: its frozen configuration, the run object phases are given, and the ledger of samples."""

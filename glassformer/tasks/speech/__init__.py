"""The speech task: config (torch-free), data, training, inference."""

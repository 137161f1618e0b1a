"""The translation task: config (torch-free), data, training, inference."""

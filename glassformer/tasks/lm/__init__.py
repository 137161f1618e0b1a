"""The lm task: config (torch-free), data, training, inference."""

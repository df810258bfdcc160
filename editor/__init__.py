"""The world editor."""

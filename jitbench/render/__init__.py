"""Terminal and markdown renderers: Run and Comparison in, rich tables and text out."""

"""A child's output: pipes read in big chunks, lines split and kept in a bounded ring, text
made safe, events for line printers."""

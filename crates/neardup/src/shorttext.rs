//! Short-text candidate confirmation by exact measures (issue 6).

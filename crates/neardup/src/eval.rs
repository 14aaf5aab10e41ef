//! Evaluation sets with planted near-duplicates and scoring (issue 4).

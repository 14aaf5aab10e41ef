//! I-Match digests with randomised lexicons (issue 6).

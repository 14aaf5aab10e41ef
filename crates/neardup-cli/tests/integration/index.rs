//! CLI tests for `neardup pairs` and `neardup search`.

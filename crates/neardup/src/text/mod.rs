//! Text to features: normalisation ([`normalize`]: HTML to text ([`html`]), NFKC ([`nfkc`]), then width, case and
//! space, folded from NFKC's output a piece at a time, then Traditional Chinese characters to
//! Simplified ([`script`]),
//! feature extraction ([`features`]: jieba TF-IDF words, character and word shingles, over the
//! character classes of `classes`: letters and digits, Han, spaceless scripts, words) and the IDF
//! dictionaries and stop words they use ([`idf`]). Output depends only on the input and the
//! options.

pub(crate) mod classes;
pub mod features;
mod fold;
pub mod html;
pub mod idf;
pub mod nfkc;
pub mod normalize;
pub mod packed;
pub mod script;

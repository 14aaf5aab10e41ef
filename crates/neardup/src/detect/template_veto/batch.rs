//! [`TemplateVeto`]: the veto over a batch corpus, as a [`Detector`] wrapping another — line
//! counts of every text read, the distinct parts and bodies of the documents inserted.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use super::{
    DistinctPart, PutOff, TemplateSketch, TemplateVetoOptions, VetoRules, UNLEARNED_TEMPLATE_DOCS,
};
use crate::detect::{keep_stronger, Detector, Verdict};
use crate::error::Result;
use crate::fingerprint::Fingerprinter;
use crate::hash::{xxh3, FastBuild};

/// Wraps a detector to veto matches that rest only on a shared template (see module docs).
#[derive(Debug)]
pub struct TemplateVeto<D: Detector> {
    inner: D,
    rules: VetoRules,
    /// Line key → how many documents read so far hold it.
    lines: RwLock<HashMap<u64, u32, FastBuild>>,
    /// Digests of the texts counted (a text read twice is counted once).
    counted: RwLock<HashSet<u64, FastBuild>>,
    /// For each text of the batch last observed, whether an identical text came before it in
    /// the input (its sketch may be put off: [`Detector::sketch_nth`]).
    copies: RwLock<Vec<bool>>,
    /// For each HTML page of the batch last observed, its visible text, parsed while its
    /// lines were counted ([`VetoRules::visible_text`]) and handed to the thread that
    /// sketches it.
    visible: RwLock<Vec<Option<Arc<str>>>>,
    /// Each inserted document's distinct part.
    parts: Vec<Option<DistinctPart>>,
    /// Each inserted thin page's repeated lines ([`TemplateSketch::thin`]).
    thin: Vec<Option<Box<[u64]>>>,
    /// Inserted documents' bodies ([`TemplateVeto::with_body_index`]); `None`: bodies are
    /// only searched.
    bodies: Option<D>,
    /// Whether a body was indexed yet (until then, searches skip `bodies`).
    any_body: bool,
}

impl<D: Detector> TemplateVeto<D> {
    /// Wraps `inner`; `fp` must be the fingerprinter `inner` normalises with.
    ///
    /// # Errors
    /// [`Error::Config`](crate::Error::Config) when an option is out of range.
    pub fn new(inner: D, fp: Fingerprinter, opts: TemplateVetoOptions) -> Result<Self> {
        Ok(TemplateVeto {
            inner,
            rules: VetoRules::new(fp, opts)?,
            lines: RwLock::new(HashMap::default()),
            counted: RwLock::new(HashSet::default()),
            copies: RwLock::new(Vec::new()),
            visible: RwLock::new(Vec::new()),
            parts: Vec::new(),
            thin: Vec::new(),
            bodies: None,
            any_body: false,
        })
    }

    /// Like [`new`](Self::new), and an inserted document's body is indexed as well, in
    /// `bodies` (an empty detector configured as `inner`): every search — the whole text's,
    /// then, when it finds nothing, the body's — looks among both the whole texts and the
    /// bodies. A post stored in a page template is then found by its bare copy, not only the
    /// other way round. Only bodies that hold lines of their own are indexed
    /// ([`VetoRules::body_is_own`]). `neardup dedup`'s default, as the online engine's
    /// (docs/quality.md).
    ///
    /// # Errors
    /// [`Error::Config`](crate::Error::Config) when an option is out of range.
    pub fn with_body_index(
        inner: D,
        bodies: D,
        fp: Fingerprinter,
        opts: TemplateVetoOptions,
    ) -> Result<Self> {
        let mut veto = TemplateVeto::new(inner, fp, opts)?;
        veto.bodies = Some(bodies.into_body_index());
        Ok(veto)
    }

    /// The wrapped detector.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// The rules applied.
    pub fn rules(&self) -> &VetoRules {
        &self.rules
    }
}

impl<D: Detector> TemplateVeto<D> {
    /// How many documents observed so far hold each line of `text`, by its exact and its
    /// template key (0 for a line too short to count).
    fn line_docs(&self, text: &str) -> (Vec<u32>, Vec<u32>) {
        let counts = self.lines.read().unwrap_or_else(|e| e.into_inner());
        let n = |k: u64| counts.get(&k).copied().unwrap_or(0);
        self.rules
            .line_keys(text)
            .into_iter()
            .map(|k| k.map_or((0, 0), |k| (n(k.exact), n(k.template))))
            .unzip()
    }

    /// The sketch of `text` whose lines are held by `line_docs` documents (`template_docs` by
    /// their template keys).
    fn sketch_counted(
        &self,
        text: &str,
        line_docs: &[u32],
        template_docs: &[u32],
    ) -> Result<TemplateSketch<D::Sketch>> {
        let inner = self.inner.sketch(text)?;
        // Before the body is sketched: the normaliser still remembers the whole text.
        let distinct = self.rules.distinct_part(text, line_docs);
        let body = match self.rules.body(text, template_docs) {
            Some(b) => Some(self.inner.sketch(&b)?),
            None => None,
        };
        let index_body = body.is_some()
            && self.bodies.is_some()
            && self.rules.body_is_own(text, line_docs, template_docs);
        // A thin page with repeated lines: which, to ask again later whether it is
        // template-only (a later batch may make them template lines).
        let thin = (distinct.is_none() && self.rules.any_repeated(line_docs))
            .then(|| {
                self.rules
                    .thin_repeated(text, &self.rules.line_keys(text), line_docs)
            })
            .flatten()
            .map(Vec::into_boxed_slice);
        Ok(TemplateSketch {
            inner,
            body,
            index_body,
            distinct,
            put_off: None,
            thin,
        })
    }
}

impl<D: Detector> Detector for TemplateVeto<D> {
    type Sketch = TemplateSketch<D::Sketch>;

    fn name(&self) -> String {
        format!("{}+template", self.inner.name())
    }

    fn observe_batch(&self, texts: &[&str]) {
        use rayon::prelude::*;
        self.inner.observe_batch(texts);
        // Which texts repeat an earlier one (in order), then every other text's lines, keyed
        // in parallel, then counted.
        let hashes: Vec<u64> = texts.par_iter().map(|t| xxh3(t.as_bytes())).collect();
        let copies: Vec<bool> = {
            let mut counted = self.counted.write().unwrap_or_else(|e| e.into_inner());
            hashes.iter().map(|&h| !counted.insert(h)).collect()
        };
        let (visible, keys): (Vec<Option<Arc<str>>>, Vec<Vec<u64>>) = texts
            .par_iter()
            .zip(&copies)
            .map(|(t, &copy)| {
                if copy {
                    (None, Vec::new())
                } else {
                    (self.rules.visible_text(t), self.rules.counted_lines(t))
                }
            })
            .unzip();
        let mut counts = self.lines.write().unwrap_or_else(|e| e.into_inner());
        for &k in keys.iter().flatten() {
            *counts.entry(k).or_insert(0) += 1;
        }
        *self.copies.write().unwrap_or_else(|e| e.into_inner()) = copies;
        *self.visible.write().unwrap_or_else(|e| e.into_inner()) = visible;
    }

    fn sketch(&self, text: &str) -> Result<Self::Sketch> {
        let (line_docs, template_docs) = self.line_docs(text);
        self.sketch_counted(text, &line_docs, &template_docs)
    }

    fn sketch_nth(&self, i: usize, text: &str) -> Result<Self::Sketch> {
        let visible = self
            .visible
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(i)
            .cloned();
        if let Some(v) = visible.flatten() {
            self.rules.remember_visible(text, v);
        }
        let copy = self
            .copies
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(i)
            .copied()
            .unwrap_or(false);
        let light = if copy {
            self.inner.sketch_exact_copy(text)
        } else {
            None
        };
        let Some(inner) = light else {
            return self.sketch(text);
        };
        let (line_docs, template_docs) = self.line_docs(text);
        Ok(TemplateSketch {
            inner: inner?,
            body: None,
            index_body: false,
            distinct: None,
            thin: None,
            put_off: Some(Box::new(PutOff {
                text: text.to_string(),
                line_docs,
                template_docs,
            })),
        })
    }

    fn resolve(&self, sketch: Self::Sketch, all_matches: bool) -> Self::Sketch {
        let Some(p) = &sketch.put_off else {
            return sketch;
        };
        if !all_matches && self.inner.indexes_exact_copy(&sketch.inner) {
            return sketch;
        }
        // The identical text sketched earlier succeeded, so this does too; were it ever to
        // fail, the exact and short parts still decide.
        self.sketch_counted(&p.text, &p.line_docs, &p.template_docs)
            .unwrap_or(sketch)
    }

    fn find(&self, sketch: &Self::Sketch) -> Vec<Verdict> {
        let template_only = DistinctPart::template_only();
        let vetted = |mut found: Vec<Verdict>| {
            if sketch.distinct.is_some() {
                found.retain(|v| {
                    let i = v.of as usize;
                    let mut theirs = self.parts.get(i).and_then(Option::as_ref);
                    // A thin page stored before its repeated lines were template lines.
                    if theirs.is_none()
                        && self
                            .thin
                            .get(i)
                            .and_then(Option::as_ref)
                            .is_some_and(|keys| {
                                let counts = self.lines.read().unwrap_or_else(|e| e.into_inner());
                                let now = |k: &u64| counts.get(k).copied().unwrap_or(0);
                                self.rules.template_only_now(
                                    keys.iter().map(now),
                                    UNLEARNED_TEMPLATE_DOCS,
                                )
                            })
                    {
                        theirs = Some(&template_only);
                    }
                    self.rules.stands(v, sketch.distinct.as_ref(), theirs)
                });
            }
            found
        };
        // Among the whole texts and the bodies (a document found by both: the stronger).
        let search = |s: &D::Sketch| {
            let mut found = self.inner.find(s);
            let bodies = self.bodies.as_ref().filter(|_| self.any_body);
            for v in bodies.map(|b| b.find(s)).unwrap_or_default() {
                keep_stronger(&mut found, v, u64::from(v.of));
            }
            vetted(found)
        };
        let found = search(&sketch.inner);
        match &sketch.body {
            Some(body) if found.is_empty() => search(body),
            _ => found,
        }
    }

    fn insert(&mut self, doc: u32, sketch: Self::Sketch) {
        debug_assert!(
            sketch.put_off.is_none(),
            "a put-off sketch is resolved before it is inserted"
        );
        let i = doc as usize;
        if let Some(d) = &sketch.distinct {
            if self.parts.len() <= i {
                self.parts.resize(i + 1, None);
            }
            self.parts[i] = Some(self.rules.kept(d));
        }
        if let Some(t) = sketch.thin {
            if self.thin.len() <= i {
                self.thin.resize(i + 1, None);
            }
            self.thin[i] = Some(t);
        }
        if let (Some(bodies), Some(body), true) = (&mut self.bodies, sketch.body, sketch.index_body)
        {
            bodies.insert(doc, body);
            self.any_body = true;
        }
        self.inner.insert(doc, sketch.inner);
    }

    fn tidy(&mut self) {
        self.inner.tidy();
        if let Some(b) = &mut self.bodies {
            b.tidy();
        }
    }

    fn spill_texts(&mut self, dir: &std::path::Path) {
        self.inner.spill_texts(dir);
        if let Some(b) = &mut self.bodies {
            b.spill_texts(dir);
        }
    }

    fn heap_bytes(&self) -> usize {
        let lines = self.lines.read().map(|m| m.capacity() * 16).unwrap_or(0)
            + self.counted.read().map(|m| m.capacity() * 8).unwrap_or(0);
        let parts: usize = self
            .parts
            .iter()
            .map(|p| p.as_ref().map_or(0, DistinctPart::heap_bytes) + 88)
            .sum();
        let bodies = self.bodies.as_ref().map_or(0, |b| b.heap_bytes());
        self.inner.heap_bytes() + bodies + lines + parts
    }
}

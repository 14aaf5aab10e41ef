//! The detector options of `dedup` and `Deduper`: the flags of `neardup dedup`, mapped to the
//! library's [`DetectorSpec`] (whose defaults are the command's).

use neardup::detect::spec::{DetectorSpec, Method};
use pyo3::prelude::*;

use crate::errors::config;
use crate::options::Options;

/// The detector option names.
pub const SPEC_OPTIONS: &[&str] = &["method", "threshold", "distance", "template_veto"];

/// Takes `method`, `threshold`, `distance` and `template_veto` (default `template_veto`:
/// `veto_default`); refuses a distance or threshold the method would ignore, as the command does.
pub fn take_spec(o: &Options<'_>, veto_default: bool) -> PyResult<DetectorSpec> {
    let d = DetectorSpec::default();
    let method: Method = match o.take::<String>("method")? {
        Some(m) => m
            .parse()
            .map_err(|e: neardup::Error| config(e.to_string()))?,
        None => d.method,
    };
    let distance = o.take::<u32>("distance")?;
    let threshold = o.take::<f64>("threshold")?;
    if distance.is_some() && !method.uses_distance() {
        return Err(config(format!(
            "`distance` is the Hamming distance of method=\"simhash\"; method=\"{}\" would ignore it",
            method.name()
        )));
    }
    if threshold.is_some() && !method.uses_threshold() {
        return Err(config(format!(
            "`threshold` is the Jaccard threshold of method=\"minhash\" and \"auto\"; method=\"{}\" would ignore it",
            method.name()
        )));
    }
    if let Some(k) = distance {
        if k > 63 {
            return Err(config(format!("`distance` = {k}: use 0 to 63 (default 3)")));
        }
    }
    if let Some(t) = threshold {
        if !(t > 0.0 && t < 1.0) {
            return Err(config(format!(
                "`threshold` = {t} is not a Jaccard similarity strictly between 0 and 1 (e.g. 0.6)"
            )));
        }
    }
    let template_veto = o.take::<bool>("template_veto")?.unwrap_or(veto_default);
    Ok(DetectorSpec {
        method,
        distance: distance.unwrap_or(d.distance),
        // As the command: `auto` under the veto has its own default threshold.
        threshold: threshold.unwrap_or(DetectorSpec::default_threshold(method, template_veto)),
        template_veto,
        ..DetectorSpec::default()
    })
}

//! The parts of a sketch that `TemplateVetoOptions::by_content` adds (encoded in version 9)
//! and a long text's passage keys (version 10): read back, and what the index asks of them.

use super::encoding::{VERSION, VERSION_8, VERSION_9};
use super::tests::{as_stored, encoded, shared_detector, sketches};
use super::*;
use crate::detect::containment::{BottomK, PackedBottomK};

/// Version 9 keeps the whole text's sample of a page stored before any of its lines was
/// repeated and the lines that made a part (`by_content`); version 8 has neither and is read
/// without them; a damaged flag is refused.
#[test]
fn version_9_whole_samples_round_trip_and_version_8_is_read_without() {
    let det = shared_detector();
    let set: Vec<u32> = (0..1000u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let mut set = set;
    set.sort_unstable();
    set.dedup();
    for mut s in sketches(det).into_iter().filter(|s| s.veto.is_some()) {
        let v = s.veto.as_mut().unwrap();
        v.whole_sample = Some(PackedBottomK::pack(&BottomK::new(&set, 256)));
        v.part_repeated = Some(ThinPage::of(&v.lines[..1], &v.lines));
        let (b8, b9) = (encoded(&s, VERSION_8), encoded(&s, VERSION_9));
        assert_eq!(decode(&b9).unwrap(), as_stored(&s));
        let mut without = as_stored(&s);
        let w = without.veto.as_mut().unwrap();
        (w.whole_sample, w.part_repeated) = (None, None);
        assert_eq!(decode(&b8).unwrap(), without);
        assert!(b9.len() > b8.len() + 256);
    }
    // The flag after the lines of a sketch without a sample: 0; any other value but 1 is
    // refused by name.
    let s = sketches(det).into_iter().find(|s| {
        s.veto
            .as_ref()
            .is_some_and(|v| v.part.is_none() && v.thin.is_none())
            && s.body.is_none()
    });
    let s = s.expect("a sketch with lines only");
    let b = encoded(&s, VERSION_9);
    for (at, what) in [
        (b.len() - 3, "whole-sample flag"),
        (b.len() - 2, "part-lines flag"),
    ] {
        assert_eq!(b[at], 0, "{what}");
        let mut bad = b.clone();
        bad[at] = 7;
        let e = decode(&bad).unwrap_err();
        assert!(e.contains(what), "{e}");
    }
}

/// A part has gone stale when most of the lines that made it are template lines now.
#[test]
fn a_part_goes_stale_when_most_of_its_lines_become_template_lines() {
    // Keys 0, 2, 4, 6 are exact, 1 a masked one; 0 was repeated when the page was stored.
    let lines = [0u64, 1, 2, 4, 6];
    let page = ThinPage::of(&[0], &lines);
    let template_now = |ks: &'static [u64]| move |k: u64| ks.contains(&k);
    // Its part lines are 2, 4 and 6 (1 is not an exact key).
    assert!(!page.part_gone_stale(&lines, &template_now(&[0, 1, 2])));
    assert!(page.part_gone_stale(&lines, &template_now(&[2, 4])));
    assert!(page.part_gone_stale(&lines, &template_now(&[2, 4, 6])));
    assert!(!page.part_gone_stale(&lines, &template_now(&[])));
}

/// Version 10 keeps a long text's passage keys (its lookups are never stored); version 9 is
/// read without them; a sketch without keys is written as before (version 8 or 9), and a
/// damaged flag or keys out of order are refused by name.
#[test]
fn version_10_passage_keys_round_trip_and_version_9_is_read_without() {
    let det = shared_detector();
    let article = "天下大势，分久必合，合久必分。周末七国分争，并入于秦。\n".repeat(3)
        + &"及秦灭之后，楚、汉分争，又并入于汉。汉朝自高祖斩白蛇而起义，一统天下。".repeat(4);
    let auto = det.sketch(&article).unwrap();
    let keys = auto
        .passages
        .as_ref()
        .expect("a long text has passages")
        .keys();
    assert_eq!(keys.len(), 4, "four distinct sentences");
    let s = DocSketch {
        auto: auto.clone(),
        body: None,
        index_body: false,
        veto: None,
        deferred: None,
    };
    let mut b10 = Vec::new();
    encode(&s, &mut b10);
    assert_eq!(b10[0], VERSION);
    let back = decode(&b10).unwrap();
    assert_eq!(back.auto.passages.as_ref().unwrap().keys(), keys);
    assert!(!back.auto.passages.as_ref().unwrap().is_checked());
    let b9 = encoded(&s, VERSION_9);
    assert_eq!(b10.len(), b9.len() + 1 + 4 + 8 * keys.len());
    assert!(decode(&b9).unwrap().auto.passages.is_none());
    // Without keys: version 8, byte for byte what version 8 wrote.
    let mut bare = s.clone();
    bare.auto.passages = None;
    let mut b = Vec::new();
    encode(&bare, &mut b);
    assert_eq!(b, encoded(&bare, VERSION_8));
    // Damage.
    let flag = b9.len();
    let mut bad = b10.clone();
    bad[flag] = 3;
    assert!(decode(&bad).unwrap_err().contains("passages flag"));
    let mut bad = b10.clone();
    let first = flag + 1 + 4;
    bad.copy_within(first..first + 8, first + 8);
    assert!(decode(&bad).unwrap_err().contains("a key repeated"));
    for cut in flag..b10.len() {
        assert!(decode(&b10[..cut]).is_err(), "cut at {cut}");
    }
}

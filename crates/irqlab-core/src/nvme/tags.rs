//! The host's tag set of one hardware queue (block/blk-mq-tag.c): a request gets a free
//! tag at submission, the tag is its NVMe command id, and the CQE's command id gives the
//! request back at completion (nvme_find_rq), freeing the tag.
//!
//! Tags are handed out last-freed first, the lowest first on an idle queue. (sbitmap
//! hands out the next free bit after a per-CPU hint; which tag a request gets changes
//! nothing the model measures.)

/// Requests of type `T` in flight on one queue, by tag.
#[derive(Clone, Debug)]
pub struct TagSet<T> {
    slots: Vec<Option<T>>,
    free: Vec<u16>,
}

impl<T> TagSet<T> {
    /// `depth` tags, all free (the queue depth; at most 65536).
    pub fn new(depth: u32) -> TagSet<T> {
        let n = depth.min(1 << 16) as usize;
        TagSet {
            slots: (0..n).map(|_| None).collect(),
            free: (0..n).rev().map(|t| t as u16).collect(),
        }
    }

    /// blk_mq_get_tag: a free tag now holds `request`; None when every tag is in use.
    pub fn alloc(&mut self, request: T) -> Option<u16> {
        let tag = self.free.pop()?;
        self.slots[usize::from(tag)] = Some(request);
        Some(tag)
    }

    /// The request a CQE's command id names, freeing its tag (blk_mq_end_request →
    /// blk_mq_put_tag). None for a tag that carries no request.
    pub fn complete(&mut self, tag: u16) -> Option<T> {
        let request = self.slots.get_mut(usize::from(tag))?.take()?;
        self.free.push(tag);
        Some(request)
    }

    /// The request on `tag`, if any.
    pub fn get(&self, tag: u16) -> Option<&T> {
        self.slots.get(usize::from(tag))?.as_ref()
    }

    /// Tags free now.
    pub fn free(&self) -> usize {
        self.free.len()
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// The requests in flight with their tags, in tag order.
    pub fn iter(&self) -> impl Iterator<Item = (u16, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(t, r)| r.as_ref().map(|r| (t as u16, r)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_carries_its_request_until_completion_frees_it() {
        let mut tags = TagSet::new(2);
        let a = tags.alloc("a").unwrap();
        let b = tags.alloc("b").unwrap();
        assert_eq!((a, b), (0, 1), "lowest first on an idle queue");
        assert_eq!(tags.alloc("c"), None, "every tag in use");
        assert_eq!(tags.get(b), Some(&"b"));
        assert_eq!(tags.complete(a), Some("a"));
        assert_eq!(tags.complete(a), None, "a tag completes once");
        assert_eq!(tags.complete(9), None, "no such tag");
        assert_eq!((tags.free(), tags.in_flight()), (1, 1));
        assert_eq!(
            tags.alloc("d"),
            Some(a),
            "the tag freed last is reused first"
        );
        assert_eq!(tags.iter().map(|(t, _)| t).collect::<Vec<_>>(), [0, 1]);
    }
}

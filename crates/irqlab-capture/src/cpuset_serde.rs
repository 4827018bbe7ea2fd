//! CPU sets in JSON as the kernel prints them (`"0-3,8"`), so a manifest of a 400-CPU
//! host stays readable.

use serde::{Deserialize, Deserializer, Serializer};

pub fn serialize<S: Serializer>(cpus: &[u32], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::cpulist::format(cpus))
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
    let text = String::deserialize(d)?;
    crate::cpulist::parse(&text).map_err(serde::de::Error::custom)
}

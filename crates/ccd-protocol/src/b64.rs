//! Base64 (standard alphabet, with padding) for binary data inside JSON
//! strings: terminal output, redraws, input. Usable as
//! `#[serde(with = "ccd_protocol::b64")]` on a `Vec<u8>` field.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{de, Deserializer, Serializer};

pub use base64::DecodeError;

/// Encode bytes as standard, padded base64.
pub fn encode(data: &[u8]) -> String {
    STANDARD.encode(data)
}

/// Decode standard, padded base64.
pub fn decode(text: &str) -> Result<Vec<u8>, DecodeError> {
    STANDARD.decode(text)
}

/// Encode bytes as standard, padded base64, appending to `out`.
pub fn encode_append(data: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + data.len().div_ceil(3) * 4, 0);
    // The slice is exactly the padded length: encoding cannot fail.
    let written = STANDARD.encode_slice(data, &mut out[start..]).unwrap_or(0);
    out.truncate(start + written);
}

/// Decode standard, padded base64, appending to `out`.
pub fn decode_into(text: &str, out: &mut Vec<u8>) -> Result<(), DecodeError> {
    STANDARD.decode_vec(text, out)
}

/// serde: write bytes as a base64 string.
pub fn serialize<S: Serializer>(data: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&encode(data))
}

/// serde: read a base64 string into bytes.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    d.deserialize_str(B64Visitor)
}

struct B64Visitor;

impl de::Visitor<'_> for B64Visitor {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a base64 string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Vec<u8>, E> {
        decode(v).map_err(|e| E::custom(format!("invalid base64: {e}")))
    }
}

/// The same for `Option<Vec<u8>>` fields:
/// `#[serde(default, skip_serializing_if = "Option::is_none", with = "ccd_protocol::b64::option")]`.
pub mod option {
    use serde::{Deserialize, Deserializer, Serializer};

    /// serde: write `Some(bytes)` as a base64 string, `None` as `null`.
    pub fn serialize<S: Serializer>(data: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match data {
            Some(d) => super::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    /// serde: read a base64 string or `null`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        #[derive(Deserialize)]
        struct Wrap(#[serde(deserialize_with = "super::deserialize")] Vec<u8>);
        Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn roundtrip() {
        let data: Vec<u8> = (0..=255u8).collect();
        let s = super::encode(&data);
        assert_eq!(super::decode(&s).ok(), Some(data));
        assert!(super::decode("not base64!").is_err());
    }
}

//! Bundle contents: the Content object named by a deploymentID's manifest part, fetched once per
//! manifestID and cached (Contents are immutable: their name is the hash of what they hold).

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use fleet_api::{BundleResource, Content, ContentFields};
use kube::Api;

/// Why a Content could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    /// The manager could not be asked.
    #[error("getting content {name}: {source}")]
    Get {
        /// The Content's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// The Content's bytes are not what Fleet writes.
    #[error("content {name}: {msg}")]
    Decode {
        /// The Content's name.
        name: String,
        /// What was wrong.
        msg: String,
    },
}

/// The manifest part of a deploymentID (`<manifestID>:<options hash>`).
pub fn manifest_id(deployment_id: &str) -> &str {
    deployment_id
        .split_once(':')
        .map_or(deployment_id, |(m, _)| m)
}

/// Decodes a Content's `content` field: base64 of gzip of `{"resources":[...]}`.
pub fn decode(name: &str, content: &ContentFields) -> Result<Vec<BundleResource>, ContentError> {
    let err = |msg: String| ContentError::Decode {
        name: name.to_string(),
        msg,
    };
    let b64 = content
        .content
        .as_deref()
        .ok_or_else(|| err("field content is empty".into()))?;
    let gz = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| err(format!("field content: base64: {e}")))?;
    let json =
        fleet_api::gzip::gunzip(&gz).map_err(|e| err(format!("field content: gzip: {e}")))?;
    #[derive(serde::Deserialize)]
    struct Manifest {
        #[serde(default)]
        resources: Vec<BundleResource>,
    }
    let m: Manifest =
        serde_json::from_slice(&json).map_err(|e| err(format!("field content: JSON: {e}")))?;
    Ok(m.resources)
}

/// Contents already fetched, by manifestID.
#[derive(Default)]
pub struct ContentCache {
    by_id: HashMap<String, Arc<Vec<BundleResource>>>,
}

impl ContentCache {
    /// The resources of manifest `id`, fetched from the manager on first use.
    pub async fn get(
        &mut self,
        upstream: &kube::Client,
        id: &str,
    ) -> Result<Arc<Vec<BundleResource>>, ContentError> {
        if let Some(r) = self.by_id.get(id) {
            return Ok(r.clone());
        }
        let api: Api<Content> = Api::all(upstream.clone());
        let c = api.get(id).await.map_err(|source| ContentError::Get {
            name: id.to_string(),
            source,
        })?;
        let res = Arc::new(decode(id, &c.spec)?);
        self.by_id.insert(id.to_string(), res.clone());
        Ok(res)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn manifest_part_of_a_deployment_id() {
        assert_eq!(manifest_id("s-abc:123"), "s-abc");
        assert_eq!(manifest_id("s-abc"), "s-abc");
    }

    #[test]
    fn decodes_what_fleet_writes_and_names_bad_content() {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        enc.write_all(br#"{"resources":[{"name":"a.yaml","content":"x: 1"}]}"#)
            .unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode(enc.finish().unwrap());
        let c = ContentFields {
            content: Some(b64),
            ..Default::default()
        };
        let r = decode("s-1", &c).unwrap();
        assert_eq!(r[0].name, "a.yaml");
        let bad = ContentFields {
            content: Some("!!".into()),
            ..Default::default()
        };
        let e = decode("s-2", &bad).unwrap_err().to_string();
        assert!(e.contains("s-2") && e.contains("base64"), "{e}");
    }
}

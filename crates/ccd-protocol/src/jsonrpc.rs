//! JSON-RPC 2.0 message types and the tolerant parser for incoming lines.
//!
//! Subset used by ccd: no batches; `id` is a string or an integer; `params`
//! is an object (arrays are accepted by the parser, but no ccd method takes
//! positional params). Unknown members of a message are ignored.

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use thiserror::Error;

use crate::error_code::ErrorCode;

/// The `"jsonrpc": "2.0"` member: serializes as `"2.0"`, accepts nothing else.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct TwoPointZero;

impl Serialize for TwoPointZero {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("2.0")
    }
}

impl<'de> Deserialize<'de> for TwoPointZero {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        if s == "2.0" {
            Ok(TwoPointZero)
        } else {
            Err(de::Error::invalid_value(
                de::Unexpected::Str(&s),
                &"the string \"2.0\"",
            ))
        }
    }
}

/// A request id: an integer or a string, echoed back in the response.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// Integer id (clients usually count up from 1).
    Number(i64),
    /// String id.
    String(String),
}

impl From<crate::methods::SizeOutOfRange> for RpcError {
    /// `invalid_params` naming the bounds.
    fn from(e: crate::methods::SizeOutOfRange) -> Self {
        RpcError::invalid_params(e.to_string()).with_data(serde_json::json!({
            "cols": e.cols,
            "rows": e.rows,
            "max_cols": crate::methods::MAX_COLS,
            "max_rows": crate::methods::MAX_ROWS,
        }))
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Number(n)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.to_owned())
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Id::String(s)
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Error)]
#[error("{message} (code {code})")]
pub struct RpcError {
    /// One of [`ErrorCode`]'s numbers (clients must tolerate others).
    pub code: i64,
    /// Human-readable, one line; not meant to be parsed.
    pub message: String,
    /// Structured details, documented per code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with `code` and `message`, no data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code: code.code(),
            message: message.into(),
            data: None,
        }
    }

    /// An error with `code`'s default message.
    pub fn from_code(code: ErrorCode) -> Self {
        Self::new(code, code.default_message())
    }

    /// Attach structured `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// Sets `data` to `d` (one of [`crate::error_data`]'s types), encoded;
    /// a value that cannot be encoded leaves `data` unset.
    pub fn with_data_of<T: serde::Serialize>(mut self, d: &T) -> Self {
        self.data = serde_json::to_value(d).ok();
        self
    }

    /// `data` read as `T` (one of [`crate::error_data`]'s types); `None`
    /// when there is no `data` or it does not fit `T`.
    pub fn data_as<T: DeserializeOwned>(&self) -> Option<T> {
        T::deserialize(self.data.as_ref()?).ok()
    }

    /// The known code, if any.
    pub fn error_code(&self) -> Option<ErrorCode> {
        ErrorCode::from_code(self.code)
    }

    /// Shorthand for [`ErrorCode::MethodNotFound`] naming the method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::MethodNotFound,
            format!("unknown method: {method}"),
        )
        .with_data(serde_json::json!({ "method": method }))
    }

    /// Shorthand for [`ErrorCode::InvalidParams`].
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidParams, message)
    }

    /// Shorthand for [`ErrorCode::InternalError`].
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InternalError, message)
    }
}

/// A request (with `id`) or, when `id` is `None`, a client notification,
/// which gets no reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Always `"2.0"`.
    pub jsonrpc: TwoPointZero,
    /// Absent for a notification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Id>,
    /// Method name, e.g. `"sessions.list"`.
    pub method: String,
    /// Named parameters (an object); may be absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl Request {
    /// A request with an id.
    pub fn new(id: impl Into<Id>, method: impl Into<String>, params: Option<Value>) -> Self {
        Self {
            jsonrpc: TwoPointZero,
            id: Some(id.into()),
            method: method.into(),
            params,
        }
    }

    /// A typed request for method `M`.
    pub fn typed<M: crate::methods::Method>(
        id: impl Into<Id>,
        params: &M::Params,
    ) -> serde_json::Result<Self> {
        Ok(Self::new(id, M::NAME, Some(serde_json::to_value(params)?)))
    }

    /// True if this is a notification (no id, no reply).
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }

    /// Decode `params` as `T`; see [`parse_params`].
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, RpcError> {
        parse_params(self.params.clone())
    }
}

/// A server-to-client (or client-to-server) notification: no id, no reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notification {
    /// Always `"2.0"`.
    pub jsonrpc: TwoPointZero,
    /// Notification name, e.g. `"session.output"`.
    pub method: String,
    /// Named parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl Notification {
    /// A notification with raw params.
    pub fn new(method: impl Into<String>, params: Option<Value>) -> Self {
        Self {
            jsonrpc: TwoPointZero,
            method: method.into(),
            params,
        }
    }

    /// A typed notification of kind `N`.
    pub fn typed<N: crate::methods::NotificationKind>(
        params: &N::Params,
    ) -> serde_json::Result<Self> {
        Ok(Self::new(N::NAME, Some(serde_json::to_value(params)?)))
    }

    /// Decode `params` as `T`; see [`parse_params`].
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, RpcError> {
        parse_params(self.params.clone())
    }
}

/// A response: exactly one of `result` and `error`.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Always `"2.0"`.
    pub jsonrpc: TwoPointZero,
    /// The request's id; `None` (sent as `null`) when the request's id could
    /// not be read (parse error, over-long line...).
    pub id: Option<Id>,
    /// `Ok` is sent as `result`, `Err` as `error`.
    pub outcome: Result<Value, RpcError>,
}

impl Response {
    /// A success response.
    pub fn success(id: Id, result: Value) -> Self {
        Self {
            jsonrpc: TwoPointZero,
            id: Some(id),
            outcome: Ok(result),
        }
    }

    /// A success response from a typed result.
    pub fn typed<T: Serialize>(id: Id, result: &T) -> serde_json::Result<Self> {
        Ok(Self::success(id, serde_json::to_value(result)?))
    }

    /// An error response; `id` is `None` when it could not be read.
    pub fn error(id: Option<Id>, error: RpcError) -> Self {
        Self {
            jsonrpc: TwoPointZero,
            id,
            outcome: Err(error),
        }
    }

    /// Decode the result as `T`. An error response yields its error; a result
    /// that does not fit `T` yields an [`ErrorCode::InternalError`] describing
    /// the mismatch (a client-side problem, never sent on the wire).
    pub fn result_as<T: DeserializeOwned>(self) -> Result<T, RpcError> {
        let v = self.outcome?;
        serde_json::from_value(v)
            .map_err(|e| RpcError::internal(format!("unexpected result shape: {e}")))
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Response", 3)?;
        st.serialize_field("jsonrpc", &self.jsonrpc)?;
        st.serialize_field("id", &self.id)?;
        match &self.outcome {
            Ok(v) => st.serialize_field("result", v)?,
            Err(e) => st.serialize_field("error", e)?,
        }
        st.end()
    }
}

impl<'de> Deserialize<'de> for Response {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        match v {
            Value::Object(obj) => response_from_object(&obj).map_err(|e| de::Error::custom(e.1)),
            _ => Err(de::Error::custom("a response must be a JSON object")),
        }
    }
}

/// Anything that can arrive on a line.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request with an id: reply exactly once.
    Request(Request),
    /// A notification: never reply (not even with an error).
    Notification(Notification),
    /// A response to a request we sent.
    Response(Response),
}

/// A line that is not a usable JSON-RPC message, with the id to reply to
/// when it could be recovered.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{error}")]
pub struct InvalidMessage {
    /// The message's id if it had a readable one, else `None` (reply with
    /// `"id": null`).
    pub id: Option<Id>,
    /// `-32700` (parse error) or `-32600` (invalid request).
    pub error: RpcError,
}

impl InvalidMessage {
    fn new(id: Option<Id>, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            id,
            error: RpcError::new(code, message),
        }
    }

    /// The error response to send back.
    pub fn into_response(self) -> Response {
        Response::error(self.id, self.error)
    }
}

/// Parse one line into a request, notification or response.
///
/// - not JSON → [`ErrorCode::ParseError`], id `None`;
/// - JSON but not a JSON-RPC 2.0 message → [`ErrorCode::InvalidRequest`],
///   with the id when the message had a valid one.
///
/// Per JSON-RPC, a server replies to an `InvalidRequest` even when the
/// message looked like a notification (there is no way to know).
pub fn parse_incoming(line: &str) -> Result<Incoming, InvalidMessage> {
    let value: Value = serde_json::from_str(line).map_err(|e| {
        InvalidMessage::new(None, ErrorCode::ParseError, format!("parse error: {e}"))
    })?;
    let obj = match value {
        Value::Object(obj) => obj,
        Value::Array(_) => {
            return Err(InvalidMessage::new(
                None,
                ErrorCode::InvalidRequest,
                "batch requests are not supported",
            ))
        }
        _ => {
            return Err(InvalidMessage::new(
                None,
                ErrorCode::InvalidRequest,
                "a message must be a JSON object",
            ))
        }
    };

    // The id first, so every later error can carry it.
    let id = match obj.get("id") {
        None => None,
        Some(v) => match id_from_value(v) {
            Some(id) => Some(id),
            None if obj.contains_key("method") => {
                return Err(InvalidMessage::new(
                    None,
                    ErrorCode::InvalidRequest,
                    "id must be a string or an integer",
                ))
            }
            // Responses may carry a null id.
            None => None,
        },
    };
    let invalid = |msg: &str| InvalidMessage::new(id.clone(), ErrorCode::InvalidRequest, msg);

    match obj.get("jsonrpc") {
        Some(Value::String(s)) if s == "2.0" => {}
        Some(_) => return Err(invalid("jsonrpc must be \"2.0\"")),
        None => return Err(invalid("missing member: jsonrpc")),
    }

    if let Some(method) = obj.get("method") {
        let method = match method {
            Value::String(s) => s.clone(),
            _ => return Err(invalid("method must be a string")),
        };
        let params = match obj.get("params") {
            None => None,
            Some(p @ (Value::Object(_) | Value::Array(_))) => Some(p.clone()),
            Some(_) => return Err(invalid("params must be an object or an array")),
        };
        return Ok(match id {
            Some(id) => Incoming::Request(Request {
                jsonrpc: TwoPointZero,
                id: Some(id),
                method,
                params,
            }),
            None => Incoming::Notification(Notification {
                jsonrpc: TwoPointZero,
                method,
                params,
            }),
        });
    }

    if obj.contains_key("result") || obj.contains_key("error") {
        return response_from_object(&obj)
            .map(Incoming::Response)
            .map_err(|(_, msg)| invalid(&msg));
    }

    Err(invalid("missing member: method"))
}

fn id_from_value(v: &Value) -> Option<Id> {
    match v {
        Value::String(s) => Some(Id::String(s.clone())),
        Value::Number(n) => n.as_i64().map(Id::Number),
        _ => None,
    }
}

fn response_from_object(obj: &Map<String, Value>) -> Result<Response, (Option<Id>, String)> {
    let id = match obj.get("id") {
        Some(Value::Null) => None,
        Some(v) => match id_from_value(v) {
            Some(id) => Some(id),
            None => return Err((None, "id must be a string, an integer or null".into())),
        },
        None => return Err((None, "a response must have an id".into())),
    };
    match obj.get("jsonrpc") {
        Some(Value::String(s)) if s == "2.0" => {}
        _ => return Err((id, "jsonrpc must be \"2.0\"".into())),
    }
    let outcome = match (obj.get("result"), obj.get("error")) {
        (Some(r), None) => Ok(r.clone()),
        (None, Some(e)) => match RpcError::deserialize(e) {
            Ok(e) => Err(e),
            Err(err) => return Err((id, format!("malformed error object: {err}"))),
        },
        (Some(_), Some(_)) => {
            return Err((id, "a response has either result or error, not both".into()))
        }
        (None, None) => return Err((id, "a response needs result or error".into())),
    };
    Ok(Response {
        jsonrpc: TwoPointZero,
        id,
        outcome,
    })
}

/// Decode a method's params as `T`. Absent or `null` params decode like `{}`
/// (so methods whose fields all have defaults need none); unknown fields are
/// ignored. Params are named only: an array (positional params) or any other
/// non-object is [`ErrorCode::InvalidParams`] saying so, and a mismatch
/// yields it with serde's explanation.
pub fn parse_params<T: DeserializeOwned>(params: Option<Value>) -> Result<T, RpcError> {
    let v = match params {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(Value::Array(_)) => return Err(RpcError::invalid_params(
            "params must be an object of named params; positional (array) params are not supported",
        )),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "params must be an object of named params",
            ))
        }
    };
    serde_json::from_value(v).map_err(|e| RpcError::invalid_params(format!("invalid params: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_named_only() {
        #[derive(Debug, serde::Deserialize)]
        struct P {
            #[allow(dead_code)]
            session: String,
        }
        let named: Result<P, _> = parse_params(Some(serde_json::json!({"session": "a"})));
        assert!(named.is_ok());
        // serde alone would take a sequence for a struct, positionally.
        let e = parse_params::<P>(Some(serde_json::json!(["a"]))).unwrap_err();
        assert_eq!(e.error_code(), Some(ErrorCode::InvalidParams));
        assert!(
            e.message.contains("positional (array) params"),
            "{}",
            e.message
        );
        let e = parse_params::<P>(Some(serde_json::json!("a"))).unwrap_err();
        assert_eq!(e.error_code(), Some(ErrorCode::InvalidParams));
    }

    #[test]
    fn response_serializes_null_id_and_one_of_result_error() {
        let r = Response::error(None, RpcError::from_code(ErrorCode::ParseError));
        let s = serde_json::to_string(&r).expect("serializes");
        assert_eq!(
            s,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}"#
        );
        let r = Response::success(Id::Number(3), Value::Null);
        let s = serde_json::to_string(&r).expect("serializes");
        assert_eq!(s, r#"{"jsonrpc":"2.0","id":3,"result":null}"#);
        let back: Response = serde_json::from_str(&s).expect("parses");
        assert_eq!(back, r);
    }

    #[test]
    fn request_roundtrip_omits_absent_members() {
        let r = Request::new("a", "daemon.status", None);
        let s = serde_json::to_string(&r).expect("serializes");
        assert_eq!(s, r#"{"jsonrpc":"2.0","id":"a","method":"daemon.status"}"#);
        assert_eq!(
            parse_incoming(&s).expect("parses"),
            Incoming::Request(r.clone())
        );
        let back: Request = serde_json::from_str(&s).expect("parses");
        assert_eq!(back, r);
    }
}

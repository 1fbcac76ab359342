//! ccd's local socket protocol, shared by the daemon, its CLI and editor
//! plugins: JSON-RPC 2.0, one UTF-8 message per `\n`-terminated line.
//!
//! - [`framing`]: line decoder with a hard length limit ([`MAX_LINE_BYTES`]),
//!   line encoder;
//! - [`jsonrpc`]: message types, [`parse_incoming`], [`parse_params`];
//! - [`ErrorCode`]: the stable error codes; [`error_data`]: the typed
//!   `data` of those whose `data` clients read;
//! - [`handshake`]: the `hello` version negotiation;
//! - [`holder`]: the holder protocol (daemon → session holder), versioned
//!   with its own `holder.hello`, and the holder's startup spec;
//! - [`methods`]: typed params/results, one module per concern;
//! - [`search`]: one hit of a content search (`ccd search --json`);
//! - [`stream`]: how terminal output travels (`session.output`,
//!   `session.resync`, `session.exited`);
//! - [`transport`]: where the socket lives;
//! - `open_enum`: the macro that declares a wire vocabulary a later peer
//!   may extend (named values and `Other(String)`, kept byte for byte).
//!
//! The full contract, with an example for every method, is
//! `docs/protocol.md`. This crate is pure and synchronous: the daemon and
//! clients wrap it in their own I/O.

// No unsafe code here, and none may be added (docs/architecture.md, "Unsafe code").
#![forbid(unsafe_code)]

// First: the macro is used by the modules below.
#[macro_use]
mod open_enum;

pub mod b64;
pub mod error_code;
pub mod error_data;
pub mod framing;
pub mod handshake;
pub mod holder;
pub mod jsonrpc;
pub mod methods;
pub mod search;
pub mod stream;
pub mod transport;

pub use error_code::ErrorCode;
pub use framing::{
    encode, encode_into, find_newline, read_line_bounded, read_line_bytes, read_line_resumable,
    FrameError, LineDecoder, PartialLine, MAX_LINE_BYTES,
};
pub use handshake::{negotiate, ProtocolRange, MIN_PROTOCOL_VERSION, PROTOCOL_VERSION};
pub use jsonrpc::{
    parse_incoming, parse_params, Id, Incoming, InvalidMessage, Notification, Request, Response,
    RpcError,
};
pub use methods::{Method, NotificationKind};
pub use stream::{OutputChunk, MAX_OUTPUT_CHUNK};

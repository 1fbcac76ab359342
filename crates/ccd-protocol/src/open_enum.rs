//! [`open_enum!`]: the one way this crate declares a wire vocabulary that a
//! later peer may extend — an enum whose known values are named variants
//! and whose unknown values are kept, as sent, in `Other(String)`.
//!
//! On the wire such an enum is a plain JSON string, exactly as a `String`
//! field was: a known name reads into its variant and writes back as the
//! same name; any other string reads into `Other` and writes back byte for
//! byte (a newer daemon's value passes through an older client unchanged).
//! What the macro generates for `Name`:
//!
//! - the enum, with `Serialize`/`Deserialize` through `String`;
//! - `Name::KNOWN`: every named variant, in declaration order;
//! - `Name::as_str`: the wire name (`Other`'s own string);
//! - `From<String>`, `From<&str>`, `From<Name> for String`, `Display`.
//!
//! A value built in code as `Other("idle")` writes as `idle` but does not
//! equal the named variant: build known values by name, or through
//! `From<&str>`.

/// Declares an open wire enum (see the module doc):
///
/// ```ignore
/// open_enum! {
///     /// Doc.
///     pub enum Step {
///         /// Doc.
///         Resuming = "resuming";
///         /// Doc.
///         Settling = "settling";
///         /// Doc of the fallback (after a `;`, which ends the named ones).
///         Other(String),
///     }
/// }
/// ```
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident = $wire:literal
            ),+ ;
            $(#[$ometa:meta])*
            Other(String) $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(from = "String", into = "String")]
        pub enum $name {
            $(
                $(#[$vmeta])*
                $variant,
            )*
            $(#[$ometa])*
            Other(String),
        }

        impl $name {
            /// Every named value, in declaration order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),*];

            /// The wire name.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $wire,)*
                    $name::Other(s) => s,
                }
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                match s.as_str() {
                    $($wire => $name::$variant,)*
                    _ => $name::Other(s),
                }
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                match s {
                    $($wire => $name::$variant,)*
                    _ => $name::Other(s.to_string()),
                }
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                match v {
                    $name::Other(s) => s,
                    v => v.as_str().to_string(),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    open_enum! {
        /// A test vocabulary.
        pub enum Word {
            /// One.
            One = "one",
            /// Two, with a dash.
            TwoDash = "two-dash";
            /// Anything else.
            Other(String),
        }
    }

    #[test]
    fn known_names_round_trip_and_others_are_kept_as_sent() {
        assert_eq!(Word::KNOWN, &[Word::One, Word::TwoDash]);
        for w in Word::KNOWN {
            let line = serde_json::to_string(w).expect("encodes");
            assert_eq!(line, format!("\"{}\"", w.as_str()));
            assert_eq!(&serde_json::from_str::<Word>(&line).expect("decodes"), w);
        }
        for raw in [r#""three""#, r#""One""#, r#""""#, r#""\u00e9t\u00e9""#] {
            let w: Word = serde_json::from_str(raw).expect("decodes");
            assert!(matches!(w, Word::Other(_)), "{raw}");
            let s: String = serde_json::from_str(raw).expect("a string");
            assert_eq!(
                serde_json::to_string(&w).expect("encodes"),
                serde_json::to_string(&s).expect("encodes")
            );
        }
        assert!(serde_json::from_str::<Word>("1").is_err());
        assert_eq!(Word::from("two-dash"), Word::TwoDash);
        assert_eq!(String::from(Word::Other("x".into())), "x");
        assert_eq!(Word::One.to_string(), "one");
    }
}

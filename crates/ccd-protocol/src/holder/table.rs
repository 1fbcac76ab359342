//! The holder's method table, declared once: [`holder_method_table!`]'s
//! invocation below lists every `holder.*` method's marker type (which ties
//! its name to its params and result types, [`Method`]). From it come
//! [`HolderMethodId`] (one variant per method: what the holder's dispatch
//! matches on, exhaustively, so a method without a handler does not
//! compile), [`HolderMethod`] (implemented by exactly these marker types:
//! what the daemon's holder client and the holder's test client accept, so
//! neither can call a method the holder does not list) and
//! [`ALL_HOLDER_METHODS`]. The same pattern as the public protocol's
//! `method_table!` in [`crate::methods`].
//!
//! Also here: [`canonical`], the public names a client uses for four of
//! them on a direct stream.

use super::{
    Attach, Collect, Detach, Hello, Info, Input, Kill, Resize, Respond, Screen, Submit, Terminal,
};
use crate::methods::Method;

/// A method of the holder protocol (only the types of the table below
/// implement it).
pub trait HolderMethod: Method {
    /// Its variant.
    const ID: HolderMethodId;
}

/// Defines [`HolderMethodId`], the [`HolderMethod`] impls and
/// [`ALL_HOLDER_METHODS`] from one list of `Variant => marker type` pairs.
macro_rules! holder_method_table {
    ($($variant:ident => $ty:ty),* $(,)?) => {
        /// One variant per holder method of this version.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum HolderMethodId {
            $(
                #[doc = concat!("[`", stringify!($ty), "`]")]
                $variant,
            )*
        }

        impl HolderMethodId {
            /// Every holder method, in table order.
            pub const ALL: &'static [HolderMethodId] = &[$(HolderMethodId::$variant),*];

            /// The method called `name` (a `holder.*` name: see
            /// [`canonical`] for the public ones), if this version has it.
            pub fn from_name(name: &str) -> Option<HolderMethodId> {
                $(
                    if name == <$ty as Method>::NAME {
                        return Some(HolderMethodId::$variant);
                    }
                )*
                None
            }

            /// The wire name.
            pub fn name(self) -> &'static str {
                match self {
                    $(HolderMethodId::$variant => <$ty as Method>::NAME,)*
                }
            }
        }

        $(
            impl HolderMethod for $ty {
                const ID: HolderMethodId = HolderMethodId::$variant;
            }
        )*

        /// Every holder method of this version.
        pub const ALL_HOLDER_METHODS: &[&str] = &[$(<$ty as Method>::NAME),*];
    };
}

holder_method_table! {
    Hello => Hello,
    Info => Info,
    Screen => Screen,
    Attach => Attach,
    Detach => Detach,
    Input => Input,
    Resize => Resize,
    Kill => Kill,
    Collect => Collect,
    Terminal => Terminal,
    Respond => Respond,
    Submit => Submit,
}

/// The method a name stands for: on a direct stream (see
/// `docs/protocol.md`) a client uses the public names, which are these
/// four `holder.*` methods; every other name is itself.
pub fn canonical(method: &str) -> &str {
    match method {
        "session.attach" => Attach::NAME,
        "session.detach" => Detach::NAME,
        "session.input" => Input::NAME,
        "session.resize" => Resize::NAME,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_each_method_once_and_reads_back() {
        assert_eq!(HolderMethodId::ALL.len(), ALL_HOLDER_METHODS.len());
        for (id, name) in HolderMethodId::ALL.iter().zip(ALL_HOLDER_METHODS) {
            assert_eq!(id.name(), *name);
            assert_eq!(HolderMethodId::from_name(name), Some(*id));
            assert!(name.starts_with("holder."), "{name}");
        }
        let mut names = ALL_HOLDER_METHODS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), ALL_HOLDER_METHODS.len(), "a name twice");
        assert_eq!(HolderMethodId::from_name("holder.teleport"), None);
        assert_eq!(HolderMethodId::from_name("session.attach"), None);
        assert_eq!(
            HolderMethodId::from_name(canonical("session.attach")),
            Some(HolderMethodId::Attach)
        );
        assert_eq!(<Submit as HolderMethod>::ID, HolderMethodId::Submit);
    }
}

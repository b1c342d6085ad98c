//! Frozen copies of released root-module layouts, so the host can load plugins built
//! against an older minor API (see `host/src/plugins/mod.rs`). Never change a released
//! baseline: it must stay byte-for-byte the layout that version shipped.
//!
//! Host plumbing, not author API: the crate root declares this module `#[doc(hidden)]`.
//! A plugin author builds against the current layout through `export_plugin!`; only the
//! host's loader and the test plugins in `tests/plugins/api1_*` name these modules.
//! Each keeps the type name `FrameworkPlugin` on purpose: abi_stable 0.11 checks type
//! name and package, not module path (measured with abi_stable 0.11.3; see "The
//! plugin ABI, in short" in `docs/architecture.md`).

/// The 1.0.0 root module (`manifest`, `detect`, `attribution`, `stage_of`).
pub mod v1_0 {
    use abi_stable::{
        declare_root_module_statics,
        library::RootModule,
        sabi_types::VersionStrings,
        std_types::{ROption, RResult, RStr, RString},
        StableAbi,
    };

    use crate::{Attribution, Claim, Manifest, MarkerKind, StageHint, TraceEvidence};

    /// The plugin-API version this layout shipped in.
    pub const API_VERSION: &str = "1.0.0";

    /// The 1.0.0 root module. Same type name as the current one on purpose: abi_stable
    /// 0.11 compares type name and package, not module path.
    #[repr(C)]
    #[derive(StableAbi)]
    #[sabi(kind(Prefix(prefix_ref = FrameworkPluginRef)))]
    #[sabi(missing_field(option))]
    pub struct FrameworkPlugin {
        pub manifest: extern "C" fn() -> RResult<Manifest, RString>,
        pub detect: extern "C" fn(&TraceEvidence) -> RResult<ROption<Claim>, RString>,
        pub attribution: extern "C" fn() -> RResult<Attribution, RString>,
        #[sabi(last_prefix_field)]
        pub stage_of: extern "C" fn(MarkerKind, RStr<'_>) -> RResult<StageHint, RString>,
    }

    impl RootModule for FrameworkPluginRef {
        declare_root_module_statics! {FrameworkPluginRef}
        const BASE_NAME: &'static str = "llm_triage_plugin";
        const NAME: &'static str = "llm_triage_plugin";
        const VERSION_STRINGS: VersionStrings = VersionStrings::new(API_VERSION);
    }

    impl FrameworkPluginRef {
        /// This 1.0 module seen through the current layout: the fields added since read
        /// as absent (`None`).
        ///
        /// # Safety
        /// `self` must have passed abi_stable's checked load
        /// (`init_root_module::<FrameworkPluginRef>()` of this module). The current layout
        /// starts with exactly this layout's prefix fields, and the prefix metadata
        /// records how many fields the library really has, so later accessors see `None`.
        pub unsafe fn upgrade(self) -> crate::FrameworkPluginRef {
            crate::FrameworkPluginRef(unsafe { self.0.cast() })
        }
    }
}

/// The 1.1.0 root module (`fusion_registry`, before live capture). Frozen like [`v1_0`].
pub mod v1_1 {
    use abi_stable::{
        declare_root_module_statics,
        library::RootModule,
        sabi_types::VersionStrings,
        std_types::{ROption, RResult, RStr, RString},
        StableAbi,
    };

    use crate::{Attribution, Claim, Manifest, MarkerKind, StageHint, TraceEvidence};

    /// The plugin-API version this layout shipped in.
    pub const API_VERSION: &str = "1.1.0";

    #[repr(C)]
    #[derive(StableAbi)]
    #[sabi(kind(Prefix(prefix_ref = FrameworkPluginRef)))]
    #[sabi(missing_field(option))]
    pub struct FrameworkPlugin {
        pub manifest: extern "C" fn() -> RResult<Manifest, RString>,
        pub detect: extern "C" fn(&TraceEvidence) -> RResult<ROption<Claim>, RString>,
        pub attribution: extern "C" fn() -> RResult<Attribution, RString>,
        #[sabi(last_prefix_field)]
        pub stage_of: extern "C" fn(MarkerKind, RStr<'_>) -> RResult<StageHint, RString>,
        pub fusion_registry: extern "C" fn() -> RResult<RString, RString>,
    }

    impl RootModule for FrameworkPluginRef {
        declare_root_module_statics! {FrameworkPluginRef}
        const BASE_NAME: &'static str = "llm_triage_plugin";
        const NAME: &'static str = "llm_triage_plugin";
        const VERSION_STRINGS: VersionStrings = VersionStrings::new(API_VERSION);
    }

    impl FrameworkPluginRef {
        /// This 1.1 module seen through the current layout; the live-capture entry points
        /// read as absent (`None`).
        ///
        /// # Safety
        /// As [`super::v1_0::FrameworkPluginRef::upgrade`]: `self` passed the
        /// checked load against this frozen layout, which prefixes the current one.
        pub unsafe fn upgrade(self) -> crate::FrameworkPluginRef {
            crate::FrameworkPluginRef(unsafe { self.0.cast() })
        }
    }
}

/// The 1.2.0 root module (live capture, before tools). Frozen like [`v1_0`].
pub mod v1_2 {
    use abi_stable::{
        declare_root_module_statics,
        library::RootModule,
        sabi_types::VersionStrings,
        std_types::{ROption, RResult, RStr, RString},
        StableAbi,
    };

    use crate::{
        Attribution, CapturePlan, CaptureRequest, Claim, EndpointEvidence, Manifest, MarkerKind,
        StageHint, TraceEvidence,
    };

    /// The plugin-API version this layout shipped in.
    pub const API_VERSION: &str = "1.2.0";

    #[repr(C)]
    #[derive(StableAbi)]
    #[sabi(kind(Prefix(prefix_ref = FrameworkPluginRef)))]
    #[sabi(missing_field(option))]
    pub struct FrameworkPlugin {
        pub manifest: extern "C" fn() -> RResult<Manifest, RString>,
        pub detect: extern "C" fn(&TraceEvidence) -> RResult<ROption<Claim>, RString>,
        pub attribution: extern "C" fn() -> RResult<Attribution, RString>,
        #[sabi(last_prefix_field)]
        pub stage_of: extern "C" fn(MarkerKind, RStr<'_>) -> RResult<StageHint, RString>,
        pub fusion_registry: extern "C" fn() -> RResult<RString, RString>,
        pub capture_plan:
            extern "C" fn(&CaptureRequest, &EndpointEvidence) -> RResult<CapturePlan, RString>,
        pub detect_endpoint: extern "C" fn(&EndpointEvidence) -> RResult<ROption<Claim>, RString>,
    }

    impl RootModule for FrameworkPluginRef {
        declare_root_module_statics! {FrameworkPluginRef}
        const BASE_NAME: &'static str = "llm_triage_plugin";
        const NAME: &'static str = "llm_triage_plugin";
        const VERSION_STRINGS: VersionStrings = VersionStrings::new(API_VERSION);
    }

    impl FrameworkPluginRef {
        /// This 1.2 module seen through the current layout; `tools` reads as absent (`None`).
        ///
        /// # Safety
        /// As [`super::v1_0::FrameworkPluginRef::upgrade`]: `self` passed the
        /// checked load against this frozen layout, which prefixes the current one.
        pub unsafe fn upgrade(self) -> crate::FrameworkPluginRef {
            crate::FrameworkPluginRef(unsafe { self.0.cast() })
        }
    }
}

/// The 1.3.0 root module (text tools, before plugin-named step markers). Frozen like
/// [`v1_0`].
pub mod v1_3 {
    use abi_stable::{
        declare_root_module_statics,
        library::RootModule,
        sabi_types::VersionStrings,
        std_types::{ROption, RResult, RStr, RString},
        StableAbi,
    };

    use crate::{
        Attribution, CapturePlan, CaptureRequest, Claim, EndpointEvidence, Manifest, MarkerKind,
        StageHint, ToolBox, TraceEvidence,
    };

    /// The plugin-API version this layout shipped in.
    pub const API_VERSION: &str = "1.3.0";

    #[repr(C)]
    #[derive(StableAbi)]
    #[sabi(kind(Prefix(prefix_ref = FrameworkPluginRef)))]
    #[sabi(missing_field(option))]
    pub struct FrameworkPlugin {
        pub manifest: extern "C" fn() -> RResult<Manifest, RString>,
        pub detect: extern "C" fn(&TraceEvidence) -> RResult<ROption<Claim>, RString>,
        pub attribution: extern "C" fn() -> RResult<Attribution, RString>,
        #[sabi(last_prefix_field)]
        pub stage_of: extern "C" fn(MarkerKind, RStr<'_>) -> RResult<StageHint, RString>,
        pub fusion_registry: extern "C" fn() -> RResult<RString, RString>,
        pub capture_plan:
            extern "C" fn(&CaptureRequest, &EndpointEvidence) -> RResult<CapturePlan, RString>,
        pub detect_endpoint: extern "C" fn(&EndpointEvidence) -> RResult<ROption<Claim>, RString>,
        pub tools: extern "C" fn() -> RResult<ToolBox, RString>,
    }

    impl RootModule for FrameworkPluginRef {
        declare_root_module_statics! {FrameworkPluginRef}
        const BASE_NAME: &'static str = "llm_triage_plugin";
        const NAME: &'static str = "llm_triage_plugin";
        const VERSION_STRINGS: VersionStrings = VersionStrings::new(API_VERSION);
    }

    impl FrameworkPluginRef {
        /// This 1.3 module seen through the current layout; `step_catalog` reads as
        /// absent (`None`).
        ///
        /// # Safety
        /// As [`super::v1_0::FrameworkPluginRef::upgrade`]: `self` passed the
        /// checked load against this frozen layout, which prefixes the current one.
        pub unsafe fn upgrade(self) -> crate::FrameworkPluginRef {
            crate::FrameworkPluginRef(unsafe { self.0.cast() })
        }
    }
}

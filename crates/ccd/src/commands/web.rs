//! `ccd web`: the options, the config file's `web_*` keys and the
//! machines served (`ccd ui`'s rules: `--host`, `$CCD_HOST`, `ui_hosts`)
//! handed to `ccd_web::run` (the server is the `ccd-web` crate).

use crate::cli::{GlobalArgs, WebArgs};
use crate::settings::Settings;
use std::process::ExitCode;

pub fn run(global: &GlobalArgs, args: &WebArgs) -> anyhow::Result<ExitCode> {
    crate::logging::init_client();
    let settings = Settings::load(global.config.as_deref())?;
    let (socket_dir, daemon) = crate::shared::connect::local_daemon(global)?;
    let machines = crate::hosts::dashboard(global, &settings)?
        .into_iter()
        .map(|t| match t {
            crate::hosts::Target::Local => ccd_web::daemon::Target::Local,
            crate::hosts::Target::Remote(r) => ccd_web::daemon::Target::Remote(r),
        })
        .collect();
    ccd_web::run(ccd_web::Options {
        listen: args.listen.clone().or(settings.web_listen),
        machines,
        read_only: args.read_only,
        revoke: args.revoke,
        tls_cert: args.tls_cert.clone().or(settings.web_tls_cert),
        tls_key: args.tls_key.clone().or(settings.web_tls_key),
        behind_proxy: args.behind_proxy.clone(),
        print_url: args.print_url,
        state_dir: crate::settings::state_dir(),
        socket_dir,
        daemon,
    })?;
    Ok(ExitCode::SUCCESS)
}

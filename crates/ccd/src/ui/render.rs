//! Drawing the dashboard with ratatui: a header (counts, each machine's
//! daemon's state), the list (columns like `ccd ls`, a HOST column when
//! several machines are shown, fitted to the width, only the rows on
//! screen built; a gone machine's rows dimmed and marked stale), the
//! preview of the selected session (or, in the content search, its hits:
//! [`search`]), and a footer (keys, the filter being typed, a confirm, a
//! message). Every
//! string from a file or the socket goes through
//! [`ccd_claude::display::line`] here or in [`super::view::Preview::new`];
//! widths are display columns (`unicode-width`), so CJK and emoji line up.

mod search;

use super::model::{Attention, Row};
use super::view::{Daemon, Mode, PreviewKind, View};
use crate::shared::cells::{ago, tilde};
use ccd_claude::display::line;
use ccd_claude::display::width::clip;
use ccd_protocol::methods::session::{ActivityStatus, SessionState};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Row as TRow, Table};
use ratatui::Frame;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use unicode_width::UnicodeWidthStr;

/// A list column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    Mark,
    Host,
    Id,
    State,
    Status,
    Ctx,
    Mem,
    Cpu,
    Tokens,
    Dollars,
    Active,
    Ccd,
    Cwd,
    Title,
}

impl Col {
    fn header(self) -> &'static str {
        match self {
            Col::Mark => "",
            Col::Host => "HOST",
            Col::Id => "ID",
            Col::State => "STATE",
            Col::Status => "STATUS",
            Col::Ctx => "CTX",
            Col::Mem => "MEM",
            Col::Cpu => "CPU",
            Col::Tokens => "TOKENS",
            Col::Dollars => "$",
            Col::Active => "ACTIVE",
            Col::Ccd => "CCD",
            Col::Cwd => "CWD",
            Col::Title => "TITLE",
        }
    }
}

/// The columns that fit `width` and their widths, in screen order: the
/// fixed ones by priority (id, status, active, state, ctx, mem, ccd)
/// while a title of 16 columns still fits, cpu, then $, then tokens, each
/// while the title keeps 40,
/// the cwd (a third of what is left, at most 40) when there is room for
/// it, the title takes the rest. `host`: the HOST column's width, when
/// rows say their machine (it comes right after the mark, before the id).
pub fn columns(width: u16, host: Option<u16>) -> Vec<(Col, u16)> {
    let width = width as i32;
    let mut fixed = vec![(Col::Mark, 1), (Col::Id, 8)];
    let mut used = 1 + 1 + 8 + 1;
    if let Some(h) = host {
        let h = i32::from(h.clamp(4, MAX_HOST_WIDTH));
        fixed.push((Col::Host, h));
        used += h + 1;
    }
    for (c, w) in [
        (Col::Status, 8),
        (Col::Active, 8),
        (Col::State, 8),
        (Col::Ctx, 5),
        (Col::Mem, 5),
        (Col::Ccd, 12),
    ] {
        if width - used - (w + 1) >= 16 {
            fixed.push((c, w));
            used += w + 1;
        }
    }
    let cwd_of = |rest: i32| if rest >= 40 { (rest / 3).min(40) } else { 0 };
    let title_of = |rest: i32| rest - cwd_of(rest) - i32::from(cwd_of(rest) > 0);
    // The title says what a waiting session asks: CPU only where the
    // title keeps 40 columns beside it.
    // Then what the conversations cost: dollars, then tokens, on the
    // same terms.
    for (c, w) in [(Col::Cpu, 4), (Col::Dollars, 8), (Col::Tokens, 6)] {
        if title_of(width - used - (w + 1)) >= 40 {
            fixed.push((c, w));
            used += w + 1;
        }
    }
    let rest = width - used;
    let cwd = cwd_of(rest);
    let order = [
        Col::Mark,
        Col::Host,
        Col::Id,
        Col::State,
        Col::Status,
        Col::Ctx,
        Col::Mem,
        Col::Cpu,
        Col::Tokens,
        Col::Dollars,
        Col::Active,
        Col::Ccd,
    ];
    let mut out: Vec<(Col, u16)> = order
        .iter()
        .filter_map(|c| {
            fixed
                .iter()
                .find(|(f, _)| f == c)
                .map(|&(c, w)| (c, w as u16))
        })
        .collect();
    let mut title = rest;
    if cwd > 0 {
        out.push((Col::Cwd, cwd as u16));
        title -= cwd + 1;
    }
    out.push((Col::Title, title.max(1) as u16));
    out
}

/// The widest HOST column (longer labels are clipped).
pub const MAX_HOST_WIDTH: u16 = 16;

/// The HOST column's width for `view`, when its rows say their machine.
fn host_width(view: &View) -> Option<u16> {
    view.shows_hosts().then(|| {
        view.hosts
            .iter()
            .map(|h| line(&h.label).width())
            .max()
            .unwrap_or(4)
            .min(usize::from(MAX_HOST_WIDTH)) as u16
    })
}

fn status_word(r: &Row) -> &'static str {
    match r.info.status {
        Some(ActivityStatus::Idle) => "idle",
        Some(ActivityStatus::Busy) => "busy",
        Some(ActivityStatus::Waiting) => "waiting",
        Some(ActivityStatus::Other) => "?",
        None => "-",
    }
}

fn cell(r: &Row, col: Col, width: u16, view: &View) -> String {
    let i = &r.info;
    let text = match col {
        Col::Mark => match r.attention() {
            Attention::Waiting => "!".into(),
            _ => " ".into(),
        },
        Col::Host => line(&r.host).into_owned(),
        Col::Id => line(crate::shared::cells::short_id(&i.session_id)).into_owned(),
        Col::State => match i.state {
            SessionState::Live => "live",
            SessionState::Dead => "dead",
            SessionState::Archived => "archived",
            _ => "unknown",
        }
        .into(),
        Col::Status => status_word(r).into(),
        // As `ccd ls`: `~` marks a share of an assumed window.
        Col::Ctx => crate::shared::cells::ctx_cell(i),
        Col::Mem => crate::shared::cells::mem_cell(i),
        Col::Cpu => crate::shared::cells::cpu_cell(i),
        Col::Tokens => crate::shared::cells::tokens_cell(i),
        Col::Dollars => crate::shared::cells::dollars_cell(i),
        Col::Active => i
            .last_activity
            .as_deref()
            .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
            .map(|t| ago(view.now, t))
            .unwrap_or_else(|| "-".into()),
        Col::Ccd => match &i.ccd {
            Some(c) => line(c.lifecycle.as_str()).into_owned(),
            None => "-".into(),
        },
        Col::Cwd => i
            .cwd
            .as_deref()
            .map(|c| line(&tilde(c, view.home.as_deref())).into_owned())
            .unwrap_or_else(|| "-".into()),
        Col::Title => {
            // What it waits for first: it is why the row is on top.
            let mut t = String::new();
            if view.stale(&r.host).is_some() {
                // Its machine is gone: what it showed last.
                t.push_str("[stale] ");
            }
            if let Some(p) = i.ccd.as_ref().and_then(|c| c.permission.as_deref()) {
                t.push_str(&format!("[permission: {}] ", line(p)));
            } else if let Some(w) = i.waiting_for.as_deref() {
                if r.attention() == Attention::Waiting {
                    t.push_str(&format!("[{}] ", line(w)));
                }
            }
            if i.several_writers {
                // Two processes split the conversation: as loud as in `ccd ls`.
                t.push_str("[several writers] ");
            }
            if let Some(n) = i.name.as_deref() {
                t.push_str(&format!("[{}] ", line(n)));
            }
            t.push_str(&line(i.title.as_deref().unwrap_or("")));
            if let Some(s) = &i.superseded_by {
                t.push_str(&format!(
                    " [left; its ccd process now writes {}]",
                    line(crate::shared::cells::short_id(&s.writes_now))
                ));
            }
            t
        }
    };
    clip(&text, width as usize)
}

fn row_style(r: &Row, view: &View) -> Style {
    if view.stale(&r.host).is_some() {
        return Style::default().add_modifier(Modifier::DIM);
    }
    let a = r.attention();
    let mut s = Style::default();
    if a == Attention::Waiting {
        s = s.add_modifier(Modifier::BOLD);
        if view.colour {
            s = s.fg(Color::Yellow);
        }
        if view.model.is_fresh(r) {
            s = s.add_modifier(Modifier::UNDERLINED);
        }
    } else if view.colour {
        s = match a {
            Attention::Busy => s.fg(Color::Cyan),
            Attention::HeldIdle => s.fg(Color::Green),
            Attention::Dead => s.add_modifier(Modifier::DIM),
            _ => s,
        };
    } else if a == Attention::Dead {
        s = s.add_modifier(Modifier::DIM);
    }
    s
}

/// The first visible row so that `selected` shows in `height` rows.
pub fn scroll(offset: usize, selected: Option<usize>, height: usize, len: usize) -> usize {
    let height = height.max(1);
    let mut offset = offset.min(len.saturating_sub(1));
    if let Some(s) = selected {
        if s < offset {
            offset = s;
        } else if s >= offset + height {
            offset = s + 1 - height;
        }
    }
    offset
}

/// Draws the whole dashboard.
pub fn draw(f: &mut Frame, view: &mut View) {
    let area = f.area();
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    let list_h = (body.height / 2).max(3).min(body.height);
    let [list, preview] =
        Layout::vertical([Constraint::Length(list_h), Constraint::Min(0)]).areas(body);
    draw_header(f, header, view);
    if view.mode == Mode::Search {
        // The hits, and the selected hit's session below them.
        search::draw_search(f, list, view);
    } else {
        draw_list(f, list, view);
    }
    draw_preview(f, preview, view);
    draw_footer(f, footer, view);
    match &view.mode {
        Mode::Help => draw_help(f, area, view),
        Mode::NewDir {
            host,
            input,
            choices,
        } => draw_new(f, area, view.shows_hosts().then_some(host), input, choices),
        Mode::NewHost { at } => draw_new_host(f, area, view, *at),
        _ => {}
    }
}

fn draw_header(f: &mut Frame, area: Rect, view: &View) {
    let c = view.model.counts();
    // The memory in use before the counts: it must fit at 80 columns.
    let (memory, measured) = view.model.memory_total();
    // And what the conversations cost, on every machine (each machine's
    // after the counts).
    let usage = view
        .model
        .usage_totals(view.hosts.iter().map(|h| h.label.as_str()));
    let spent = |u: &super::model::UsageSum| {
        format!(
            "{} · {} tokens",
            crate::shared::cells::dollars_text(u.cost_usd, u.unpriced),
            crate::shared::cells::tokens_text(u.tokens)
        )
    };
    let memory = if measured > 0 {
        format!(" ({} in use)", crate::shared::cells::size_cell(memory))
    } else {
        String::new()
    };
    let spent_total = usage
        .as_ref()
        .map(|u| format!(" · {}", spent(&u.total)))
        .unwrap_or_default();
    let mut text = format!(
        " ccd{memory}{spent_total} · {} sessions: {} waiting · {} busy · {} held idle · {} elsewhere · {} dead",
        view.model.len(),
        c[0],
        c[1],
        c[2],
        c[3],
        c[4]
    );
    if view.model.dropped > 0 {
        text.push_str(&format!(" · {} oldest not shown", view.model.dropped));
    }
    if let Some(u) = usage.as_ref().filter(|_| view.shows_hosts()) {
        for (host, sum) in u.by_host.iter().filter(|(_, s)| s.sessions > 0) {
            text.push_str(&format!(" · {}: {}", line(host), spent(sum)));
        }
    }
    if view.loading {
        text = " ccd · loading sessions…".into();
    }
    let mut spans = vec![];
    let mut room = area.width as usize;
    let alarm = if view.colour {
        Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
    } else {
        Style::default().add_modifier(Modifier::BOLD | Modifier::REVERSED)
    };
    for h in &view.hosts {
        // First: it matters more than the counts, and must fit at 80 columns.
        let text = match &h.daemon {
            Daemon::Gone(why) if !view.shows_hosts() => {
                format!(" DAEMON GONE ({}), reconnecting… ", line(why))
            }
            Daemon::Gone(why) => format!(
                " {} UNREACHABLE ({}), retrying; its rows are stale ",
                line(&h.label),
                line(why)
            ),
            Daemon::Connecting if view.shows_hosts() && !h.loaded => {
                format!(" {} connecting… ", line(&h.label))
            }
            _ => continue,
        };
        let s = clip(&text, room);
        room = room.saturating_sub(s.width());
        let style = if matches!(h.daemon, Daemon::Gone(_)) {
            alarm
        } else {
            Style::default().add_modifier(Modifier::DIM)
        };
        spans.push(Span::styled(s, style));
    }
    spans.push(Span::styled(
        clip(&text, room),
        Style::default().add_modifier(Modifier::BOLD),
    ));
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn draw_list(f: &mut Frame, area: Rect, view: &mut View) {
    let cols = columns(area.width, host_width(view));
    let height = area.height.saturating_sub(1) as usize;
    let len = view.model.visible_len();
    let selected = view.model.selected_index();
    view.offset = scroll(view.offset, selected, height, len);
    let header = TRow::new(
        cols.iter()
            .map(|(c, _)| match c {
                Col::Mem if view.model.sorted_by_memory() => "MEM↓".to_string(),
                c => c.header().to_string(),
            })
            .collect::<Vec<_>>(),
    )
    .style(Style::default().add_modifier(Modifier::BOLD));
    // Only the rows on screen are built, whatever the list's length.
    let rows: Vec<TRow> = (view.offset..(view.offset + height).min(len))
        .filter_map(|n| {
            let r = view.model.visible_row(n)?;
            let mut style = row_style(r, view);
            if Some(n) == selected {
                style = style.add_modifier(Modifier::REVERSED);
            }
            Some(
                TRow::new(
                    cols.iter()
                        .map(|&(c, w)| cell(r, c, w, view))
                        .collect::<Vec<_>>(),
                )
                .style(style),
            )
        })
        .collect();
    let widths: Vec<Constraint> = cols.iter().map(|&(_, w)| Constraint::Length(w)).collect();
    let table = Table::new(rows, widths).header(header).column_spacing(1);
    f.render_widget(table, area);
    // An empty list says how to start, across the whole width under the
    // header (a table cell would clip it to its column).
    if len == 0 && !view.loading && area.height >= 2 {
        let note = if !view.model.filter().is_empty() {
            format!(" nothing matches \\{}", line(view.model.filter()))
        } else if view.shows_hosts() {
            " no Claude Code sessions on these machines yet: press n to start one".to_string()
        } else {
            " no Claude Code sessions on this machine yet: press n to start one".to_string()
        };
        let at = Rect {
            y: area.y + 1,
            height: 1,
            ..area
        };
        f.render_widget(
            Paragraph::new(clip(&note, usize::from(area.width)))
                .style(Style::default().add_modifier(Modifier::BOLD)),
            at,
        );
    }
}

fn draw_preview(f: &mut Frame, area: Rect, view: &View) {
    if area.height == 0 {
        return;
    }
    let sel = view.focus();
    let sel = sel.as_ref();
    let title = match (sel, &view.preview) {
        (Some(r), Some(p)) if p.session == r.session && p.host == r.host => format!(
            " {}{} · {} ",
            if view.shows_hosts() {
                format!("{}:", line(&r.host))
            } else {
                String::new()
            },
            line(crate::shared::cells::short_id(&r.session)),
            match p.kind {
                PreviewKind::Screen => "live screen",
                PreviewKind::Transcript => "transcript",
                PreviewKind::Note => "preview",
            }
        ),
        (Some(r), _) => format!(" {} ", line(crate::shared::cells::short_id(&r.session))),
        (None, _) => " preview ".into(),
    };
    let block = Block::default()
        .borders(Borders::TOP)
        .title(clip(&title, area.width as usize));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let lines: Vec<String> = match (sel, &view.preview) {
        (Some(r), Some(p)) if p.session == r.session && p.host == r.host => {
            let h = inner.height as usize;
            let src = match p.kind {
                // A screen is clipped at the top: its last rows are the
                // input box and status line, its first the oldest output.
                PreviewKind::Screen => {
                    let last = p
                        .lines
                        .iter()
                        .rposition(|l| !l.trim().is_empty())
                        .map(|i| i + 1)
                        .unwrap_or(0);
                    &p.lines[last.saturating_sub(h)..last]
                }
                _ => &p.lines[p.lines.len().saturating_sub(h)..],
            };
            src.iter().map(|l| clip(l, inner.width as usize)).collect()
        }
        (Some(_), _) => vec!["…".into()],
        (None, _) => vec![],
    };
    let text: Vec<Line> = lines.into_iter().map(Line::from).collect();
    f.render_widget(Paragraph::new(text), inner);
}

fn draw_footer(f: &mut Frame, area: Rect, view: &View) {
    let text = match &view.mode {
        Mode::Search if view.search.editing => {
            "search what was said: Enter searches · ↑/↓ hits · Ctrl-U clears · Esc back to the list"
                .to_string()
        }
        Mode::Search => match &view.message {
            Some(m) => line(m).into_owned(),
            None => "Enter go in (attach, or resume in its folder) · o observe · f fork · / edit · Esc list · q quit".to_string(),
        },
        Mode::Filter => format!("\\{}▏  Enter keep · Esc clear", line(view.model.filter())),
        Mode::ConfirmKill { label, .. } => {
            format!("kill {}? y to kill, any other key to keep it", line(label))
        }
        Mode::NewDir { .. } => "new session: Tab completes · Enter starts · Esc cancels".into(),
        Mode::NewHost { .. } => {
            "new session on which machine? ↑/↓ choose · Enter · Esc cancels".into()
        }
        _ => match &view.message {
            Some(m) => line(m).into_owned(),
            None => {
                let filter = if view.model.filter().is_empty() {
                    String::new()
                } else {
                    format!("[\\{}] ", line(view.model.filter()))
                };
                let full = format!(
                    "{filter}Enter attach · o observe · f fork · n new · k kill · a/d approve/deny · / search · \\ filter · ? help · q quit"
                );
                if full.width() <= area.width as usize {
                    full
                } else {
                    // Narrow: every key still shown, `?` and `q` included.
                    format!("{filter}⏎ attach · o obs · f fork · n new · k kill · a/d · / search · \\ filter · ? · q")
                }
            }
        },
    };
    let style = Style::default().add_modifier(Modifier::REVERSED);
    f.render_widget(
        Paragraph::new(clip(&text, area.width as usize)).style(style),
        area,
    );
}

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

fn draw_help(f: &mut Frame, area: Rect, view: &View) {
    let lines = super::keys::help_lines(&line(&view.detach_key));
    let w = lines.iter().map(|l| l.width()).max().unwrap_or(0) as u16 + 4;
    let r = centered(area, w, lines.len() as u16 + 2);
    f.render_widget(Clear, r);
    let block = Block::bordered().title(" keys ");
    let inner = block.inner(r);
    f.render_widget(block, r);
    let text: Vec<Line> = lines
        .iter()
        .map(|l| Line::from(clip(l, inner.width as usize)))
        .collect();
    f.render_widget(Paragraph::new(text), inner);
}

fn draw_new(f: &mut Frame, area: Rect, host: Option<&String>, input: &str, choices: &[String]) {
    let shown = choices.len().min(8);
    let r = centered(
        area,
        area.width.saturating_sub(4).min(100),
        shown as u16 + 3,
    );
    f.render_widget(Clear, r);
    let title = match host {
        Some(h) => format!(" new session on {} in directory ", line(h)),
        None => " new session in directory ".into(),
    };
    let block = Block::bordered().title(clip(&title, r.width.saturating_sub(2) as usize));
    let inner = block.inner(r);
    f.render_widget(block, r);
    let w = inner.width as usize;
    let mut text = vec![Line::from(clip(&format!("{}▏", line(input)), w))];
    for c in choices.iter().take(shown) {
        text.push(Line::from(clip(&format!("  {}", line(c)), w)));
    }
    if choices.len() > shown {
        text.push(Line::from(format!("  … {} more", choices.len() - shown)));
    }
    f.render_widget(Paragraph::new(text), inner);
}

/// The machine picker of a new session: every machine shown, the chosen
/// one marked, a gone one said so.
fn draw_new_host(f: &mut Frame, area: Rect, view: &View, at: usize) {
    let r = centered(
        area,
        area.width.saturating_sub(4).min(60),
        view.hosts.len() as u16 + 2,
    );
    f.render_widget(Clear, r);
    let block = Block::bordered().title(" new session on which machine? ");
    let inner = block.inner(r);
    f.render_widget(block, r);
    let w = inner.width as usize;
    let text: Vec<Line> = view
        .hosts
        .iter()
        .enumerate()
        .map(|(n, h)| {
            let gone = if matches!(h.daemon, Daemon::Gone(_)) {
                " (unreachable)"
            } else {
                ""
            };
            let t = clip(
                &format!(
                    "{} {}{gone}",
                    if n == at { "›" } else { " " },
                    line(&h.label)
                ),
                w,
            );
            if n == at {
                Line::from(Span::styled(
                    t,
                    Style::default().add_modifier(Modifier::REVERSED),
                ))
            } else {
                Line::from(t)
            }
        })
        .collect();
    f.render_widget(Paragraph::new(text), inner);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::model::tests::info;
    use crate::ui::view::{Preview, PreviewKind};
    use ccd_protocol::methods::session::SessionUsage;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    const NOW: &str = "2026-12-01T12:00:00Z";

    fn at(ago_s: i64) -> String {
        (OffsetDateTime::parse(NOW, &Rfc3339).unwrap() - time::Duration::seconds(ago_s))
            .format(&Rfc3339)
            .unwrap()
    }

    fn fixture() -> View {
        let mut v = View::new(false, Some("/home/me".into()), "ctrl-\\".into(), &[]);
        v.now = OffsetDateTime::parse(NOW, &Rfc3339).unwrap();
        v.loading = false;
        let mut rows = vec![];
        let mut add = |sid: &str, state, status, lc, ago_s, title: &str, cwd: &str| {
            let mut i = info(sid, state, status, lc, 0);
            i.last_activity = Some(at(ago_s));
            i.title = Some(title.into());
            i.cwd = Some(cwd.into());
            rows.push(i);
        };
        add(
            "3c5e7a9b-1d2f",
            "live",
            Some("waiting"),
            None,
            20,
            "外部セッション: テストを直して 🚀🚀",
            "/home/me/src/日本語",
        );
        add(
            "9cc17429-aaaa",
            "live",
            Some("busy"),
            Some("busy"),
            3,
            "fix the flaky login test",
            "/home/me/src/api",
        );
        add(
            "0b6c5c1e-bbbb",
            "live",
            Some("idle"),
            Some("idle"),
            600,
            "hostile \x1b]0;pwned\x07title\x1b[2J with \u{202e}bidi\r\nand a newline",
            "/tmp/\x1b[31mred",
        );
        add("77aa88bb-cccc", "dead", None, None, 86_400 * 2, "port the settings page to the new 🧪 framework, then update every snapshot and the docs", "/home/me/src/web");
        add(
            "12345678-dddd",
            "dead",
            None,
            None,
            86_400 * 9,
            "",
            "/srv/x",
        );
        for (n, (mib, cpu)) in [(1229u64, 3.4), (612, 97.0), (4198, 0.0)]
            .into_iter()
            .enumerate()
        {
            rows[n].pid = Some(4000 + n as u32);
            rows[n].cost = Some(
                serde_json::from_value(serde_json::json!({
                    "memory_bytes": mib << 20, "memory_kind": "pss", "cpu_percent": cpu,
                    "cpu_interval_ms": 5000, "processes": 2, "measured_at": NOW
                }))
                .unwrap(),
            );
        }
        // What three conversations cost (one with a model the table does
        // not price: a lower bound).
        for (n, (tokens, usd, unpriced)) in [
            (1_234_567u64, 4.56, false),
            (98_000, 0.42, false),
            (12_000_000, 123.0, true),
        ]
        .into_iter()
        .enumerate()
        {
            rows[[0, 1, 3][n]].usage = Some(usage(tokens, usd, unpriced));
        }
        rows[4].state = SessionState::Archived;
        v.model.set_rows("local", rows);
        v.model.select_id("local", "9cc17429-aaaa");
        v.preview = Some(Preview::new(
            "local",
            "9cc17429-aaaa",
            PreviewKind::Screen,
            &[
                "╭────────────────────────────╮".into(),
                "│ ✻ Welcome to Claude Code!  │".into(),
                "╰────────────────────────────╯".into(),
                "".into(),
                "> fix the flaky login test 日本語 🚀".into(),
                "● Running tests… \x1b]52;c;ZXZpbA==\x07".into(),
                "".into(),
                "".into(),
            ],
        ));
        v
    }

    fn usage(tokens: u64, usd: f64, unpriced: bool) -> SessionUsage {
        SessionUsage {
            input_tokens: tokens,
            output_tokens: 0,
            cache_creation_tokens: 0,
            cache_read_tokens: 0,
            total_tokens: tokens,
            cost_usd: usd,
            models: vec!["claude-sonnet-4-20250514".into()],
            unpriced: if unpriced {
                vec!["claude-opus-5-5".into()]
            } else {
                vec![]
            },
        }
    }

    fn render(v: &mut View, w: u16, h: u16) -> TestBackend {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| draw(f, v)).unwrap();
        t.backend().clone()
    }

    #[test]
    fn list_and_screen_preview_at_80x24() {
        insta::assert_snapshot!(render(&mut fixture(), 80, 24));
    }

    #[test]
    fn list_and_screen_preview_at_120x40() {
        insta::assert_snapshot!(render(&mut fixture(), 120, 40));
    }

    #[test]
    fn list_and_screen_preview_at_250x70() {
        insta::assert_snapshot!(render(&mut fixture(), 250, 70));
    }

    #[test]
    fn transcript_preview_filter_and_hostile_row_at_120x40() {
        let mut v = fixture();
        v.model.select_id("local", "0b6c5c1e-bbbb");
        v.preview = Some(Preview::new(
            "local",
            "0b6c5c1e-bbbb",
            PreviewKind::Transcript,
            &[
                "› make it \x1b[5mblink\x1b[0m".into(),
                "● Sure — 好的 👍".into(),
                "⏺ Bash(ls -la)".into(),
                "  ⎿ total 0".into(),
            ],
        ));
        v.mode = Mode::Filter;
        v.model.set_filter("e");
        let b = render(&mut v, 120, 40);
        let text = format!("{b}");
        assert!(!text.contains('\x1b') && !text.contains('\u{202e}'));
        insta::assert_snapshot!(b);
    }

    #[test]
    fn help_and_daemon_gone_at_80x24() {
        let mut v = fixture();
        v.mode = Mode::Help;
        v.hosts[0].daemon = Daemon::Gone("connection closed".into());
        insta::assert_snapshot!(render(&mut v, 80, 24));
    }

    #[test]
    fn two_machines_one_gone_at_120x30() {
        let mut v = View::new(
            false,
            Some("/home/me".into()),
            "ctrl-\\".into(),
            &[
                "local".into(),
                "devbox".into(),
                "build-server-in-the-basement".into(),
            ],
        );
        v.now = OffsetDateTime::parse(NOW, &Rfc3339).unwrap();
        let row = |sid: &str, status: Option<&str>, lc: Option<&str>, ago_s: i64| {
            let mut i = info(sid, "live", status, lc, 0);
            i.last_activity = Some(at(ago_s));
            i
        };
        let mut here = row("11111111-here", Some("idle"), Some("idle"), 30);
        here.usage = Some(usage(2_000_000, 26.4, false));
        let mut busy = row("33333333-busy", Some("busy"), Some("busy"), 1);
        busy.usage = Some(usage(500_000, 1.5, false));
        v.set_rows("local", vec![here]);
        v.set_rows(
            "devbox",
            vec![row("22222222-there", Some("waiting"), None, 5)],
        );
        v.set_rows("build-server-in-the-basement", vec![busy]);
        v.set_daemon("local", Daemon::Connected);
        v.set_daemon("build-server-in-the-basement", Daemon::Connected);
        v.set_daemon(
            "devbox",
            Daemon::Gone("ssh: connect to host devbox port 22: Connection refused".into()),
        );
        v.model.select_id("devbox", "22222222-there");
        v.preview = Some(Preview::new(
            "devbox",
            "22222222-there",
            PreviewKind::Note,
            &["devbox is unreachable".into()],
        ));
        let shot = render(&mut v, 120, 30);
        insta::assert_snapshot!(shot);
        let text = format!("{shot:?}");
        assert!(text.contains("HOST") && text.contains("[stale]"), "{text}");
        // What the conversations cost, over all and on each machine.
        // (wide enough for the header to hold it beside the gone machine).
        let wide = render(&mut v, 300, 30);
        let header: String = wide.buffer().content()[..300]
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(header.contains("$27.90 · 2.5M tokens"), "{header}");
        assert!(header.contains("local: $26.40 · 2.0M tokens"), "{header}");
        // The machine picker of `n`.
        v.mode = Mode::NewHost { at: 1 };
        let picker = format!("{:?}", render(&mut v, 80, 24));
        assert!(
            picker.contains("› devbox (unreachable)") && picker.contains("which machine"),
            "{picker}"
        );
    }

    /// An empty machine: the list says which key starts a session, whole
    /// (it was once a table cell clipped to the ID column's 8 columns).
    #[test]
    fn an_empty_list_says_how_to_start_at_80x24() {
        let mut v = View::new(false, Some("/home/me".into()), "ctrl-\\".into(), &[]);
        v.now = OffsetDateTime::parse(NOW, &Rfc3339).unwrap();
        v.loading = false;
        v.set_rows("local", vec![]);
        v.set_daemon("local", Daemon::Connected);
        let shot = render(&mut v, 80, 24);
        let text = format!("{shot:?}");
        assert!(
            text.contains("no Claude Code sessions on this machine yet: press n to start one"),
            "{text}"
        );
        insta::assert_snapshot!(shot);
    }

    #[test]
    fn new_session_prompt_at_80x24() {
        let mut v = fixture();
        v.mode = Mode::NewDir {
            host: "local".into(),
            input: "/home/me/src/".into(),
            choices: vec!["/home/me/src/api/".into(), "/home/me/src/web/".into()],
        };
        insta::assert_snapshot!(render(&mut v, 80, 24));
    }

    #[test]
    fn no_color_means_no_colour_only_attributes() {
        let colours = |colour: bool| {
            let mut v = fixture();
            v.colour = colour;
            v.hosts[0].daemon = Daemon::Gone("x".into());
            let b = render(&mut v, 120, 40);
            let buf = b.buffer();
            let mut fgs = std::collections::HashSet::new();
            for c in buf.content() {
                fgs.insert(format!("{:?}", c.fg));
            }
            // The waiting row (the first under the column header) is bold either way.
            let bold = buf
                .cell((4, 2))
                .is_some_and(|c| c.modifier.contains(Modifier::BOLD));
            (fgs, bold)
        };
        let (fgs, bold) = colours(false);
        assert_eq!(fgs.into_iter().collect::<Vec<_>>(), ["Reset"]);
        assert!(bold);
        let (fgs, bold) = colours(true);
        assert!(fgs.contains("Yellow") && fgs.contains("Red"), "{fgs:?}");
        assert!(bold);
    }

    #[test]
    fn tiny_terminals_do_not_break_it() {
        for (w, h) in [(1, 1), (5, 2), (10, 3), (20, 5), (30, 8)] {
            let new = Mode::NewDir {
                host: "local".into(),
                input: "/x/".into(),
                choices: vec!["/x/a/".into(); 20],
            };
            let kill = Mode::ConfirmKill {
                host: "local".into(),
                session: "s".into(),
                label: "s".into(),
            };
            for mode in [
                Mode::List,
                Mode::Help,
                Mode::Filter,
                Mode::Search,
                new,
                kill,
            ] {
                let mut v = fixture();
                v.mode = mode;
                v.hosts[0].daemon = Daemon::Gone("x".into());
                render(&mut v, w, h);
            }
        }
    }

    /// The content search's hits: one line each (machine, id, what the
    /// session is now, when, folder, what was said with the match
    /// marked), a machine that failed named, hostile text in a snippet
    /// sanitized before the mark.
    #[test]
    fn search_hits_with_a_hostile_snippet_at_120x30() {
        use crate::ui::search::tests::hit;
        use ccd_protocol::methods::session::SearchResult;
        let mut v = View::new(
            false,
            Some("/home/me".into()),
            "ctrl-\\".into(),
            &["local".into(), "devbox".into(), "far".into()],
        );
        v.now = OffsetDateTime::parse(NOW, &Rfc3339).unwrap();
        v.loading = false;
        // The held one is listed: its word comes from the dashboard's row.
        let mut held = info("9cc17429-held", "live", Some("idle"), Some("idle"), 0);
        held.last_activity = Some(at(60));
        v.set_rows("local", vec![held]);
        v.set_daemon("local", Daemon::Connected);
        v.set_daemon("devbox", Daemon::Connected);
        v.set_daemon("far", Daemon::Gone("ssh: Connection refused".into()));
        v.mode = Mode::Search;
        v.search.query = "auth bug".into();
        let hosts = ["local".to_string(), "devbox".into(), "far".into()];
        v.search.asked(1, "auth bug", &hosts);
        let dead = SessionState::Dead;
        let ok = |hits| {
            Ok(SearchResult {
                hits,
                sessions: 3,
                truncated: false,
                indexed: true,
            })
        };
        v.search.answer(
            "local",
            1,
            ok(vec![
                hit(
                    "9cc17429-held",
                    SessionState::Live,
                    3.0,
                    &at(120),
                    ["where is the ", "auth bug", " coming from?"],
                ),
                hit(
                    "0b6c5c1e-dead",
                    dead,
                    2.0,
                    &at(86_400 * 3),
                    [
                        "a very long preamble that cannot all fit before the match so it is cut on its left: \x1b]0;pwned\x07title\x1b[2J and \u{202e}bidi\r\n",
                        "AUTH\x1b[31m bug",
                        " in 日本語 login.rs 🚀 then more text after it that runs on and on past the edge of the pane",
                    ],
                ),
            ]),
        );
        v.search.answer(
            "devbox",
            1,
            ok(vec![hit(
                "77aa88bb-far",
                dead,
                2.5,
                &at(86_400 * 9),
                ["", "auth bug", " fixed by rotating the key"],
            )]),
        );
        v.search.answer(
            "far",
            1,
            Err("unreachable (ssh: connect to host far port 22: Connection refused)".into()),
        );
        // The selected hit's session below the hits.
        v.preview = Some(Preview::new(
            "local",
            "9cc17429-held",
            PreviewKind::Screen,
            &[
                "> where is the auth bug coming from?".into(),
                "● In token.rs".into(),
            ],
        ));
        let b = render(&mut v, 120, 30);
        let text = format!("{b}");
        assert!(text.contains("local:9cc17429 · live screen"), "{text}");
        assert!(
            !text.contains('\x1b') && !text.contains('\u{202e}') && !text.contains('\x07'),
            "{text}"
        );
        assert!(text.contains("far not searched: unreachable"), "{text}");
        assert!(text.contains("held") && text.contains("dead"), "{text}");
        // The match is marked (bold, underlined), its sanitized text alone.
        let buf = b.buffer();
        let marked: String = buf
            .content()
            .iter()
            .filter(|c| c.modifier.contains(Modifier::UNDERLINED))
            .map(|c| c.symbol())
            .collect();
        assert_eq!(marked, "auth bugauth bugAUTH bug", "{text}");
        insta::assert_snapshot!(b);
    }

    #[test]
    fn a_snippet_keeps_its_match_in_view() {
        use super::search::fit_snippet;
        use ccd_claude::display::width::width;
        // Room for all: as it is.
        assert_eq!(fit_snippet("ab ", "cd", " ef", 20), ["ab ", "cd", " ef"]);
        // A long before is cut on its left; after keeps half the rest.
        let [b, m, a] = fit_snippet(&"x".repeat(50), "MATCH", &"y".repeat(50), 25);
        assert_eq!(m, "MATCH");
        assert!(b.starts_with('…') && a.ends_with('…'), "{b}|{a}");
        assert_eq!(width(&b) + width(&m) + width(&a), 25);
        assert_eq!(width(&b), 10);
        // Nothing after: before takes the room.
        let [b, _, a] = fit_snippet(&"界".repeat(30), "m", "", 21);
        assert!(a.is_empty() && width(&b) <= 20 && width(&b) >= 19, "{b}");
        // A match wider than the room is clipped; nothing else shows.
        let [b, m, a] = fit_snippet("before", &"M".repeat(40), "after", 10);
        assert_eq!((b.as_str(), m.as_str(), a.as_str()), ("", "MMMMMMMMM…", ""));
        // No room at all.
        assert_eq!(fit_snippet("a", "b", "c", 0), ["", "", ""]);
    }

    #[test]
    fn columns_fit_every_width() {
        for w in [20u16, 40, 80, 120, 250, 1000] {
            let cols = columns(w, None);
            let total: u16 = cols.iter().map(|&(_, w)| w).sum::<u16>() + cols.len() as u16 - 1;
            assert!(total <= w.max(21), "{w}: {cols:?}");
            assert_eq!(cols.last().unwrap().0, Col::Title);
        }
        assert!(columns(80, None).iter().any(|c| c.0 == Col::Status));
        assert!(columns(120, None).iter().any(|c| c.0 == Col::Cwd));
    }

    #[test]
    fn scrolling_keeps_the_selection_on_screen() {
        assert_eq!(scroll(0, Some(30), 10, 100), 21);
        assert_eq!(scroll(21, Some(5), 10, 100), 5);
        assert_eq!(scroll(50, None, 10, 3), 2);
    }

    #[test]
    fn ten_thousand_rows_draw_quickly() {
        let mut v = fixture();
        let rows = (0..10_000)
            .map(|n| info(&format!("{n:08}-x"), "dead", None, None, n))
            .collect();
        v.model.set_rows("local", rows);
        let started = std::time::Instant::now();
        render(&mut v, 250, 70);
        // Only the rows on screen are built: far under a frame's budget
        // even in a debug build.
        assert!(started.elapsed() < std::time::Duration::from_millis(500));
    }
}

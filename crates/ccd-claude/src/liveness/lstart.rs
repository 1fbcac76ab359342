//! The macOS `procStart` form: `ps -o lstart=` output in UTC and the C
//! locale, e.g. `"Thu Jul  9 04:18:26 2026"`, to and from unix seconds.
//! Both directions are platform independent so they are tested
//! everywhere; only the probe that reads the kernel is macOS-only.

use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time};

/// `secs` (unix seconds) in the `lstart` form `ps` prints under `TZ=UTC`
/// and `LC_ALL=C` (`%a %b %e %T %Y`: the day padded with a space), what
/// the CLI writes as `procStart` on macOS. `None` for an instant outside
/// the years `time` represents.
pub fn format_lstart(secs: i64) -> Option<String> {
    let t = OffsetDateTime::from_unix_timestamp(secs).ok()?;
    let format = time::macros::format_description!(
        "[weekday repr:short] [month repr:short] [day padding:space] [hour]:[minute]:[second] [year]"
    );
    t.format(&format).ok()
}

/// Parses an `lstart` string to unix seconds (UTC). Whitespace runs are
/// insignificant; the weekday is checked against the date.
pub fn parse_lstart(s: &str) -> Option<i64> {
    let mut parts = s.split_ascii_whitespace();
    let weekday = parts.next()?;
    let month = month_from_abbrev(parts.next()?)?;
    let day: u8 = parts.next()?.parse().ok()?;
    let clock = parts.next()?;
    let year: i32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    let mut hms = clock.split(':');
    let h: u8 = hms.next()?.parse().ok()?;
    let m: u8 = hms.next()?.parse().ok()?;
    let sec: u8 = hms.next()?.parse().ok()?;
    if hms.next().is_some() {
        return None;
    }
    let date = Date::from_calendar_date(year, month, day).ok()?;
    if !date.weekday().to_string().starts_with(weekday) || weekday.len() != 3 {
        return None;
    }
    let dt = PrimitiveDateTime::new(date, Time::from_hms(h, m, sec).ok()?);
    Some(dt.assume_utc().unix_timestamp())
}

fn month_from_abbrev(s: &str) -> Option<Month> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let idx = MONTHS.iter().position(|m| *m == s)?;
    Month::try_from(idx as u8 + 1).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_example() {
        // 2026-07-09T04:18:26Z
        assert_eq!(
            parse_lstart("Thu Jul  9 04:18:26 2026"),
            Some(1_783_570_706)
        );
        assert_eq!(
            parse_lstart("  Thu Jul 9 04:18:26 2026\n"),
            Some(1_783_570_706)
        );
    }

    #[test]
    fn formats_as_ps_prints_it() {
        assert_eq!(
            format_lstart(1_783_570_706).as_deref(),
            Some("Thu Jul  9 04:18:26 2026")
        );
        // Two-digit days are not padded; midnight is 00:00:00.
        assert_eq!(
            format_lstart(1_783_641_600).as_deref(),
            Some("Fri Jul 10 00:00:00 2026")
        );
        assert_eq!(
            format_lstart(0).as_deref(),
            Some("Thu Jan  1 00:00:00 1970")
        );
        assert_eq!(format_lstart(i64::MAX), None);
    }

    #[test]
    fn format_and_parse_are_inverse() {
        // Every second of a leap day's turn, and a spread over decades.
        let leap = 1_709_164_800; // 2024-02-29T00:00:00Z
        let samples = (leap - 2..leap + 2)
            .chain((0..200).map(|i| 946_684_800 + i * 9_876_543))
            .chain([0, 2_147_483_647, 4_102_444_800]);
        for secs in samples {
            let text = format_lstart(secs).unwrap();
            assert_eq!(parse_lstart(&text), Some(secs), "{text}");
        }
    }

    #[test]
    fn rejects_malformed() {
        for s in [
            "",
            "9989",
            "Fri Jul  9 04:18:26 2026", // wrong weekday
            "Thu Jly  9 04:18:26 2026",
            "Thu Jul 32 04:18:26 2026",
            "Thu Jul  9 04:18 2026",
            "Thu Jul  9 04:18:26 2026 extra",
        ] {
            assert_eq!(parse_lstart(s), None, "{s:?}");
        }
    }
}

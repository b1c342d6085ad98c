//! Calendar arithmetic for the few dates llm-triage prints or compares (bundle headers,
//! the age of a plugin's upstream commit), without a date-time dependency.
//!
//! "Now" is `SOURCE_DATE_EPOCH` when set (the reproducible-builds convention, so generated
//! documents and age checks can be pinned), else the system clock.

/// Seconds since the Unix epoch: `SOURCE_DATE_EPOCH`, else now.
pub(crate) fn now_secs() -> u64 {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        })
}

/// Today as days since the Unix epoch (UTC).
pub(crate) fn today() -> i64 {
    (now_secs() / 86_400) as i64
}

/// `YYYY-MM-DD HH:MM:SS UTC` for seconds since the Unix epoch.
pub(crate) fn utc_text(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since the Unix epoch of an ISO date `YYYY-MM-DD` (a time part after it is
/// ignored); `None` when it is not a valid date.
pub(crate) fn days_from_iso(date: &str) -> Option<i64> {
    let date = date.trim().get(..10)?;
    let mut parts = date.split('-');
    let y: i64 = parts.next()?.parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let d: u32 = parts.next()?.parse().ok()?;
    let days = days_from_civil(y, m, d);
    // Reject 2026-02-30 and the like: the round trip must give the same date.
    (civil_from_days(days) == (y, m, d)).then_some(days)
}

/// Howard Hinnant's days-from-civil: the day count of a proleptic Gregorian date.
pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Howard Hinnant's days-to-civil: the proleptic Gregorian date of a day count.
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_civil() {
        // python3: datetime.fromtimestamp(t, timezone.utc)
        assert_eq!(utc_text(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc_text(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_text(1_798_761_599), "2026-12-31 23:59:59 UTC");
        assert_eq!(utc_text(1_761_000_012), "2025-10-20 22:40:12 UTC");
    }

    #[test]
    fn iso_dates_count_days() {
        // python3: (date(2026, 8, 22) - date(1970, 1, 1)).days
        assert_eq!(days_from_iso("1970-01-01"), Some(0));
        assert_eq!(days_from_iso("2026-08-22"), Some(20_687));
        assert_eq!(days_from_iso("2000-02-29T10:00:00Z"), Some(11_016));
        assert_eq!(days_from_iso("2026-02-30"), None);
        assert_eq!(days_from_iso("unknown"), None);
        for days in [-1000, 0, 11_016, 20_687, 80_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}

-- The programme episodes the statistics read: int_programme_episodes as of the end of the last
-- complete month (the day before the latest month of int_engineer_months), the months the other
-- statistics read (int_engineer_months_complete). Enrolments, exam attempts and exits after that
-- day are left out and open episodes are censored on it, so a night that only adds to the month
-- in progress leaves the table as it was, and the programme statistics are kept.
{{ programme_episodes(complete=true) }}

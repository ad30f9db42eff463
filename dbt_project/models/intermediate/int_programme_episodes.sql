-- Programme episodes: an in-scope engineer's preparation for one certification track (read by
-- the statistics code). One row per (person_key, certification_code). The episode starts at the
-- person's first enrolment in a course of the track on a day the person is in scope, unless the
-- person held an active certification of the code that day (a refresher: no episode). The
-- programme is the highest-priority programme type among the track's enrolments in the 90 days
-- from the start (bootcamp > vendor_partnership > apprenticeship > internal > online; 'unknown'
-- when the catalogue names none). The episode is followed until the first pass of the code, the
-- last in-scope day, or the as-of date, whichever comes first.
{{ programme_episodes() }}

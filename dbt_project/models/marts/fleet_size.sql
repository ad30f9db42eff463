-- GPU count per cluster at each month end (latest snapshot on or before it) and its size class.
select * from {{ ref('int_fleet_months') }}

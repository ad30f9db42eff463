"""Workforce planning: the cheapest way to staff a fleet plan, from the measured rates."""

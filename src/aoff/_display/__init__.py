"""What a person sees: the Display protocol, the Rich dashboard and its pure renderables."""

// Replaced by the doctor (issue 4).

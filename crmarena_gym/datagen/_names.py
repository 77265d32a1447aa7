"""Word lists for people and places: agents, customers and where they live.

All lists are ours. Order matters (the generator indexes into them with seeded draws), so append
new entries at the end and bump ``GENERATOR_VERSION`` when changing them.
"""

from __future__ import annotations

FIRST_NAMES: tuple[str, ...] = tuple(
    """
    Aaliyah Adrian Aisha Alejandro Alice Amara Andre Anika Arjun Astrid Beatriz Benjamin Bianca Bilal
    Brandon Brianna Caleb Camila Carlos Chen Chloe Colin Dalia Daniel Darius Deepa Diego Dmitri Elena
    Elias Emeka Emily Esther Ethan Fatima Felix Fiona Gabriel Grace Hana Harper Hassan Ibrahim Imani
    Ines Isaac Ivy Jamal Jasmine Javier Jin Jonah Julia Kai Kamala Karim Keiko Kendra Kofi Laila Lars
    Leah Liam Lucia Luis Maya Malik Mara Marcus Mariana Mateo Mei Miguel Mina Nadia Naomi Nathan Nia
    Nikhil Noah Nora Olivia Omar Oscar Owen Paloma Priya Quentin Rafael Rania Ravi Rebecca Renee Rohan
    Rosa Ruth Samir Sara Sebastian Selena Shira Simone Sofia Soren Tariq Tessa Theo Tomas Uma Valentina
    Victor Wen Willa Xavier Yara Yusuf Zara Zoe Abigail Bruno Clara Dominic Eva Farah Gideon Helena
    Ismael Joanna Kenji Lorenzo Monique Nils Ophelia Pedro Rhea Stefan Talia Ulrich Vera Wyatt
    """.split()
)

LAST_NAMES: tuple[str, ...] = tuple(
    """
    Abara Acosta Adeyemi Alvarez Andersen Arslan Bailey Banerjee Barros Becker Bennett Bhatt Brennan
    Brooks Caldwell Campos Carter Castillo Chandra Chavez Cho Coleman Cruz Dang Delgado Diallo Dixon
    Dubois Duarte Ellis Engel Espinoza Farouk Fernandes Fischer Fleming Fofana Fuentes Garcia Gill
    Goldberg Gomez Gupta Haddad Hansen Harris Hayashi Herrera Hoang Holloway Ibarra Iqbal Jensen
    Johansson Kaur Kawasaki Kelley Khan Kim Kowalski Kruger Lambert Larsen Le Lindqvist Lopez Maddox
    Mahmoud Marsh Martins Mbeki Medina Mendoza Mercer Moreau Morales Mwangi Nakamura Navarro Nguyen
    Novak Nwosu Obi Okafor Olsen Ortega Osei Park Patel Pereira Petrov Phillips Quinn Rahman Ramirez
    Reyes Rios Rossi Russo Saito Salazar Santos Schmidt Sharma Silva Singh Soto Sullivan Suzuki Tanaka
    Tran Turner Valdez Vargas Varga Vasquez Vogel Wagner Walsh Watanabe Weber Whitfield Wong Yamamoto
    Yilmaz Young Zhang Zhou Ziegler Zimmerman Ahmed Blackwood Crane Donovan Everett Forsyth Greer Hollis
    Ingram Jarvis
    """.split()
)

#: Two-letter state, relative share of customers, cities, telephone area codes.
STATES: tuple[tuple[str, float, tuple[str, ...], tuple[int, ...]], ...] = (
    ("CA", 12.0, ("Los Angeles", "San Diego", "Sacramento", "Oakland", "Fresno"), (213, 619, 916, 510)),
    ("TX", 9.0, ("Houston", "Austin", "Dallas", "San Antonio", "El Paso"), (713, 512, 214, 210)),
    ("FL", 6.5, ("Miami", "Orlando", "Tampa", "Jacksonville"), (305, 407, 813, 904)),
    ("NY", 6.0, ("New York", "Buffalo", "Rochester", "Albany"), (212, 716, 585, 518)),
    ("PA", 4.0, ("Philadelphia", "Pittsburgh", "Harrisburg"), (215, 412, 717)),
    ("IL", 4.0, ("Chicago", "Springfield", "Naperville"), (312, 217, 630)),
    ("OH", 3.5, ("Columbus", "Cleveland", "Cincinnati"), (614, 216, 513)),
    ("GA", 3.2, ("Atlanta", "Savannah", "Athens"), (404, 912, 706)),
    ("NC", 3.2, ("Charlotte", "Raleigh", "Asheville"), (704, 919, 828)),
    ("MI", 3.0, ("Detroit", "Grand Rapids", "Ann Arbor"), (313, 616, 734)),
    ("NJ", 2.8, ("Newark", "Jersey City", "Princeton"), (973, 201, 609)),
    ("VA", 2.6, ("Richmond", "Arlington", "Norfolk"), (804, 703, 757)),
    ("WA", 2.4, ("Seattle", "Spokane", "Tacoma"), (206, 509, 253)),
    ("AZ", 2.2, ("Phoenix", "Tucson", "Flagstaff"), (602, 520, 928)),
    ("MA", 2.1, ("Boston", "Cambridge", "Worcester"), (617, 857, 508)),
    ("TN", 2.1, ("Nashville", "Memphis", "Knoxville"), (615, 901, 865)),
    ("IN", 2.0, ("Indianapolis", "Bloomington", "Fort Wayne"), (317, 812, 260)),
    ("MD", 1.8, ("Baltimore", "Annapolis", "Rockville"), (410, 443, 301)),
    ("MO", 1.8, ("St. Louis", "Kansas City", "Columbia"), (314, 816, 573)),
    ("WI", 1.8, ("Milwaukee", "Madison", "Green Bay"), (414, 608, 920)),
    ("CO", 1.8, ("Denver", "Boulder", "Colorado Springs"), (303, 720, 719)),
    ("MN", 1.7, ("Minneapolis", "St. Paul", "Duluth"), (612, 651, 218)),
    ("SC", 1.6, ("Charleston", "Columbia", "Greenville"), (843, 803, 864)),
    ("AL", 1.5, ("Birmingham", "Huntsville", "Mobile"), (205, 256, 251)),
    ("LA", 1.4, ("New Orleans", "Baton Rouge", "Lafayette"), (504, 225, 337)),
    ("KY", 1.4, ("Louisville", "Lexington", "Bowling Green"), (502, 859, 270)),
    ("OR", 1.3, ("Portland", "Eugene", "Bend"), (503, 541, 971)),
    ("OK", 1.2, ("Oklahoma City", "Tulsa", "Norman"), (405, 918, 580)),
    ("CT", 1.1, ("Hartford", "New Haven", "Stamford"), (860, 203, 475)),
    ("UT", 1.0, ("Salt Lake City", "Provo", "Ogden"), (801, 385, 435)),
    ("NV", 1.0, ("Las Vegas", "Reno", "Henderson"), (702, 775, 725)),
    ("IA", 0.9, ("Des Moines", "Cedar Rapids", "Iowa City"), (515, 319, 563)),
    ("KS", 0.9, ("Wichita", "Topeka", "Lawrence"), (316, 785, 913)),
    ("NM", 0.6, ("Albuquerque", "Santa Fe", "Las Cruces"), (505, 575)),
    ("NE", 0.6, ("Omaha", "Lincoln"), (402, 531)),
    ("ID", 0.5, ("Boise", "Idaho Falls"), (208, 986)),
    ("HI", 0.4, ("Honolulu", "Hilo"), (808,)),
    ("ME", 0.4, ("Portland", "Bangor"), (207,)),
    ("VT", 0.2, ("Burlington", "Montpelier"), (802,)),
    ("MT", 0.3, ("Billings", "Missoula", "Bozeman"), (406,)),
)

CUSTOMER_EMAIL_DOMAINS: tuple[str, ...] = ("example.com", "example.net", "example.org", "mail.example.com")

AGENT_TIME_ZONES: tuple[str, ...] = ("America/Los_Angeles", "America/Denver", "America/Chicago", "America/New_York")
